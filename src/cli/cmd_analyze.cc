// `vgpu analyze`: offline analyses of per-pod (per-slice) metric series (docs/analyze.md).
//
//   vgpu analyze anomalies [--util FILE] [--memory FILE] [--evaluate [--seeds A-B]
//                          [--leak-rate GIB_PER_HOUR] [--unmatched]] [--json]
//   vgpu analyze forecast  [--util FILE] [--horizon N] [--groups FILE] [--json]
//   vgpu analyze rightsize [--memory FILE] [--json]
//   vgpu analyze rules --rules FILE --series FILE [--dry-run] [--json]
//   vgpu analyze scenario NAME --out FILE
//
// The series default to the bundled Alibaba GenAI subset (data/alibaba-genai-2026). Exit 0, or
// 2 for bad input (a CSV or rule file error names file, line and column).
#include <cstdio>
#include <cstring>
#include <string>

#include "analyze/report.h"
#include "analyze/scenarios.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/sim/sim_replay.h"
#include "common/atomic_file.h"
#include "sim/options.h"

namespace vgpu::cli {
namespace {

std::string DefaultSeries(const char* file) { return DataDir() + "/alibaba-genai-2026/" + file; }
constexpr const char* kUtilFile = "pod_gpu_duty_cycle_anon.csv";
constexpr const char* kMemoryFile = "pod_gpu_memory_used_bytes_anon.csv";

int Emit(std::string_view command, const Result<std::string>& out) {
  if (!out) return ReportStatus(command, out.error());
  std::fputs(out->c_str(), stdout);
  return kExitOk;
}

int RunAnomalies(int argc, char** argv) {
  analyze::AnomalyRequest r;
  r.util = DefaultSeries(kUtilFile);
  r.memory = DefaultSeries(kMemoryFile);
  std::string seeds = "1-5";
  CLI::App app(
      "Detect spikes, level shifts and stuck-at-zero runs in utilization series and leaks in "
      "memory series, per series and on their sum. --evaluate injects labelled anomalies into "
      "the series instead and reports precision and recall per kind.",
      "vgpu analyze anomalies");
  app.add_option("--util", r.util, "utilization series CSV (percent; '' for none)");
  app.add_option("--memory", r.memory, "memory series CSV (bytes; '' for none)");
  app.add_flag("--evaluate", r.evaluate, "inject anomalies (docs/analyze.md) and score");
  app.add_option("--seeds", seeds, "seeds of the generator for --evaluate, A or A-B");
  app.add_option("--leak-rate", r.leak_gib_per_hour,
                 "rate of the injected leaks for --evaluate, GiB/h (default 1)")
      ->check(CLI::Range(0.01, 1000.0));
  app.add_flag("--unmatched", r.unmatched,
               "with --evaluate: list the detections that match no label and are not the "
               "series' own events, with the nearest label of their series");
  app.add_flag("--json", r.json, "JSON output");
  AllowEmptyValues(app, {"--util", "--memory"});
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  auto parsed = sim::ParseSeedList(seeds);
  if (!parsed) return ReportStatus("analyze anomalies", parsed.error().WithContext("--seeds"));
  r.seeds = *parsed;
  for (auto [flag, path] : {std::pair{"--util", &r.util}, std::pair{"--memory", &r.memory}}) {
    if (!path->empty()) {
      if (Status st = InputFile(flag, *path); !st.ok())
        return ReportStatus("analyze anomalies", st);
    }
  }
  return Emit("analyze anomalies", analyze::RunAnomalies(r));
}

int RunForecastCmd(int argc, char** argv) {
  analyze::ForecastRequest r;
  r.util = DefaultSeries(kUtilFile);
  CLI::App app(
      "Forecast the cluster load (the sum of the series) and every series --horizon samples "
      "ahead, each with the forecaster (EWMAs, trailing medians) that has been most accurate on "
      "its own past (docs/analyze.md), judged against persistence and EWMA(0.3) on the second "
      "half of the time, series by series and as the median over the series.",
      "vgpu analyze forecast");
  app.add_option("--util", r.util, "utilization series CSV (percent)");
  app.add_option("--horizon", r.horizon, "samples ahead (default 5)");
  app.add_option("--groups", r.groups,
                 "CSV of series,node: also forecast each node's sum (per-node load)");
  app.add_flag("--json", r.json, "JSON output");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  for (auto [flag, path] : {std::pair{"--util", &r.util}, std::pair{"--groups", &r.groups}}) {
    if (path->empty() && std::string(flag) == "--groups") continue;
    if (Status st = InputFile(flag, *path); !st.ok()) return ReportStatus("analyze forecast", st);
  }
  return Emit("analyze forecast", analyze::RunForecast(r));
}

int RunRightsizeCmd(int argc, char** argv) {
  analyze::RightsizeRequest r;
  r.memory = DefaultSeries(kMemoryFile);
  CLI::App app(
      "Recommend a memory limit per workload with the risk it is exceeded in the next hour, "
      "and compare the rule with a trailing-maximum rule at the same exceedance.",
      "vgpu analyze rightsize");
  app.add_option("--memory", r.memory, "memory series CSV (bytes)");
  app.add_option("--target", r.target, "exceedance the margin is fitted for (default 0.05)");
  app.add_flag("--json", r.json, "JSON output");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  if (Status st = InputFile("--memory", r.memory); !st.ok()) {
    return ReportStatus("analyze rightsize", st);
  }
  return Emit("analyze rightsize", analyze::RunRightsize(r));
}

int RunRulesCmd(int argc, char** argv) {
  analyze::RulesRequest r;
  bool dry_run = false;
  CLI::App app(
      "Evaluate tuning rules over recorded signal series (timestamp,target,signal,value) and "
      "report what they would have done. Rule reference: docs/analyze.md.",
      "vgpu analyze rules");
  app.add_option("--rules", r.rules, "rule file (YAML)")->required();
  app.add_option("--series", r.series, "signal series CSV")->required();
  app.add_flag("--dry-run", dry_run,
               "report the actions instead of applying them (the only mode "
               "offline; the node daemon applies them)");
  app.add_flag("--json", r.json, "JSON output");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  if (!dry_run) {
    return ReportStatus("analyze rules",
                        Status::InvalidArgument("offline, only --dry-run is possible: the node "
                                                "daemon applies actions"));
  }
  for (auto [flag, path] : {std::pair{"--rules", &r.rules}, std::pair{"--series", &r.series}}) {
    if (Status st = InputFile(flag, *path); !st.ok()) return ReportStatus("analyze rules", st);
  }
  return Emit("analyze rules", analyze::RunRulesDryRun(r));
}

int RunScenarioCmd(int argc, char** argv) {
  std::string name, out;
  CLI::App app("Write a scripted rule scenario as signal series (docs/analyze.md).",
               "vgpu analyze scenario");
  app.add_option("name", name, "copy_hog, leak, xid_burst, idle or quiet")->required();
  app.add_option("--out", out, "output CSV file")->required();
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  auto s = analyze::MakeScenario(name);
  if (!s) return ReportStatus("analyze scenario", s.error());
  Status st = OutputFile("--out", out);
  if (!st.ok()) return ReportStatus("analyze scenario", st);
  st = WriteFileAtomically(out, s->csv, 0644);
  if (!st.ok()) return ReportStatus("analyze scenario", st);
  std::printf("%s: scenario %s, intended rule %s\n", out.c_str(), name.c_str(),
              s->intended_rule.empty() ? "(none)" : s->intended_rule.c_str());
  return kExitOk;
}

struct Sub {
  const char* name;
  const char* summary;
  int (*run)(int, char**);
};
constexpr Sub kSubs[] = {
    {"anomalies", "spikes, level shifts, stuck-at-zero, leaks; --evaluate scores them",
     RunAnomalies},
    {"forecast", "cluster and per-series load, minutes ahead, against baselines", RunForecastCmd},
    {"rightsize", "a memory limit per workload with its risk of being exceeded", RunRightsizeCmd},
    {"rules", "tuning rules over signal series: what they would do (--dry-run)", RunRulesCmd},
    {"scenario", "write a scripted rule scenario as signal series", RunScenarioCmd},
};

}  // namespace

int RunAnalyze(int argc, char** argv) {
  for (const Sub& s : kSubs) {
    if (argc >= 2 && std::strcmp(argv[1], s.name) == 0) return s.run(argc - 1, argv + 1);
  }
  bool help = argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0);
  FILE* f = help ? stdout : stderr;
  std::fprintf(f, "Usage: vgpu analyze COMMAND [options]   (vgpu analyze COMMAND --help)\n");
  for (const Sub& s : kSubs) std::fprintf(f, "  %-10s %s\n", s.name, s.summary);
  if (help) return kExitOk;
  if (argc < 2) {
    std::fprintf(stderr, "vgpu analyze: no command given\n");
  } else {
    std::fprintf(stderr, "vgpu analyze: unknown command \"%s\"\n", argv[1]);
  }
  return kExitBadInput;
}

}  // namespace vgpu::cli
