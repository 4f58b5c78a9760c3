// `vgpu sim`: the FGD paper's snapshot experiment on a trace (see src/sim/snapshot.h), for one or
// more policies and seeds, with a table on the terminal and optional CSV, SVG chart and JSON.
// `--mode replay` runs the time-based replay instead (cmd_sim_replay.cc).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/sim/sim_replay.h"
#include "sched/registry.h"
#include "sim/experiment.h"
#include "sim/options.h"
#include "sim/progress.h"
#include "sim/published.h"
#include "sim/report.h"
#include "sim/svg_chart.h"
#include "sim/trace.h"

namespace vgpu::cli {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPublishedFile = "fgd_published_unallocated_pct.csv";

struct SimFlags {
  std::string nodes, pods, policy = "all", seeds = "42-51", csv, svg, published;
  double inflate = 1.3;
  int threads = 0;
  bool json = false;
  bool quiet = false;
  std::vector<std::string> options;
};

std::string SimHelpFooter() {
  std::string out = "Policies:\n";
  const sched::PolicyRegistry& r = sched::BuiltinPolicies();
  for (const std::string& n : r.Names()) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-13s %s\n", n.c_str(), r.Summary(n).c_str());
    out += line;
  }
  out += "  all           every policy above once (default in place of the policy it names)\n";
  out +=
      "\nModes:\n"
      "  snapshot (default)  the FGD paper's protocol: shuffled pods placed one by one, inflated\n"
      "                      to --inflate x capacity, nothing leaves.\n"
      "  replay              pods arrive at their creation time and run for their trace run time;\n"
      "                      pods that do not fit wait in a queue (--queue). Compares shared\n"
      "                      GPUs with whole-GPU allocation (--alloc) per load point\n"
      "                      (--time-compress x --cluster-scale). Defaults: --policy default,\n"
      "                      --seeds 42. See docs/replay.md.\n";
  return out;
}

Status RunSnapshotMode(const SimFlags& f) {
  VGPU_RETURN_IF_ERROR(InputFile("--nodes", f.nodes));
  VGPU_RETURN_IF_ERROR(InputFile("--pods", f.pods));
  VGPU_RETURN_IF_ERROR(OutputFile("--csv", f.csv));
  VGPU_RETURN_IF_ERROR(OutputFile("--svg", f.svg));
  if (!(f.inflate > 0 && f.inflate <= 10)) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", f.inflate);
    return Status::InvalidArgument(std::string("--inflate: must be in (0, 10], got ") + shown);
  }
  if (f.threads < 0 || f.threads > 1024) {
    return Status::InvalidArgument("--threads: must be 0 (one per core) to 1024, got " +
                                   std::to_string(f.threads));
  }
  auto seeds = sim::ParseSeedList(f.seeds);
  if (!seeds) return seeds.error().WithContext("--seeds");
  auto policies = sim::ParsePolicyList(f.policy, sched::BuiltinPolicies());
  if (!policies) return Status::InvalidArgument("--policy: " + policies.error().message());
  std::map<std::string, std::map<std::string, std::string>> params;
  for (const std::string& o : f.options) {
    VGPU_RETURN_IF_ERROR(sim::ParsePolicyOption(o, &params).WithContext("--option"));
  }

  sched::ModelRegistry models;
  auto nodes = sim::LoadNodeList(f.nodes, &models);
  if (!nodes) return AsBadInput(nodes.error());
  auto pods = sim::LoadPodList(f.pods, models);
  if (!pods) return AsBadInput(pods.error());
  const size_t nvlink = static_cast<size_t>(std::count_if(
      pods->begin(), pods->end(), [](const sim::TracePod& p) { return p.request.require_nvlink; }));
  if (nvlink > 0) {
    return Status::InvalidArgument(
        "--pods: " + std::to_string(nvlink) +
        " pod(s) require NVLink (topology column); the snapshot experiment models no links: "
        "use --mode replay --topology SHAPES");
  }

  std::optional<sim::PublishedResults> published;
  std::string published_path = f.published;
  if (published_path.empty()) {
    fs::path guess = fs::path(f.pods).parent_path() / kPublishedFile;
    std::error_code ec;
    if (fs::exists(guess, ec)) published_path = guess.string();
  } else {
    VGPU_RETURN_IF_ERROR(InputFile("--published", published_path));
  }
  if (!published_path.empty()) {
    auto loaded = sim::PublishedResults::Load(published_path);
    if (loaded) {
      published = std::move(*loaded);
    } else if (!f.published.empty()) {
      return AsBadInput(loaded.error());
    } else {
      std::fprintf(stderr, "vgpu sim: ignoring %s: %s\n", published_path.c_str(),
                   loaded.error().message().c_str());
    }
  }

  const std::string trace = fs::path(f.pods).stem().string();
  const size_t num_pods = pods->size();
  const size_t num_nodes = nodes->size();
  int64_t num_gpus = 0;
  for (const auto& n : *nodes) num_gpus += static_cast<int64_t>(n.gpus.size());
  if (num_gpus == 0) return Status::InvalidArgument(f.nodes + ": the node list has no GPUs");
  std::vector<std::pair<std::string, sched::PodRequest>> pod_list;
  pod_list.reserve(pods->size());
  for (auto& p : *pods) pod_list.emplace_back(std::move(p.name), p.request);
  const sim::SnapshotInput input =
      sim::MakeSnapshotInput(std::move(*nodes), std::move(pod_list), &models, trace);

  sim::ExperimentOptions opt;
  opt.policies = *policies;
  opt.seeds = *seeds;
  opt.inflate = f.inflate;
  opt.params = params;
  opt.threads = f.threads > 0 ? f.threads
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  sim::ProgressBar bar("vgpu sim");
  if (!f.quiet && StderrIsTty()) {
    opt.on_progress = [&bar](int64_t done, int64_t total) { bar.Update(done, total); };
  }
  const auto start = std::chrono::steady_clock::now();
  auto runs = sim::RunExperiment(input, opt);
  bar.Finish();
  if (!runs) return AsBadInput(runs.error());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<sim::PolicySummary> summaries;
  for (const sim::PolicyRuns& r : *runs) summaries.push_back(sim::Aggregate(r));
  sim::ReportInfo info;
  info.trace = trace;
  info.pods = num_pods;
  info.nodes = num_nodes;
  info.gpus = num_gpus;
  info.inflate = f.inflate;
  info.seeds = *seeds;
  info.published = published ? &*published : nullptr;

  if (!f.csv.empty()) {
    Status s = sim::WriteTextFile(f.csv, sim::CsvText(*runs));
    if (!s.ok()) return s;
  }
  if (!f.svg.empty()) {
    sim::ChartOptions chart;
    chart.title = "Unallocated GPUs vs arrived workload: " + trace;
    chart.subtitle = std::to_string(num_gpus) + " GPUs on " + std::to_string(num_nodes) +
                     " nodes; mean over " + std::to_string(seeds->size()) + " seed" +
                     (seeds->size() == 1 ? "" : "s") + " (" + sim::FormatSeeds(*seeds) + ")";
    Status s = sim::WriteTextFile(f.svg, sim::RenderChart(summaries, chart));
    if (!s.ok()) return s;
  }
  const std::string out =
      f.json ? sim::FormatJson(summaries, info) : sim::FormatTable(summaries, info);
  std::fputs(out.c_str(), stdout);
  if (!f.quiet) {
    std::fprintf(stderr, "vgpu sim: %zu runs in %.1f s on %d thread%s",
                 runs->size() * seeds->size(), seconds, opt.threads, opt.threads == 1 ? "" : "s");
    if (!f.csv.empty()) std::fprintf(stderr, "; csv: %s", f.csv.c_str());
    if (!f.svg.empty()) std::fprintf(stderr, "; chart: %s", f.svg.c_str());
    std::fprintf(stderr, "\n");
  }
  return Status::Ok();
}

}  // namespace

int RunSim(int argc, char** argv) {
  constexpr std::string_view kCommand = "sim";
  CLI::App app(
      "Replays a GPU cluster trace. Default (--mode snapshot): the FGD paper's snapshot protocol: "
      "pods shuffled per seed, resampled until --inflate x the GPU capacity has arrived, placed "
      "one "
      "by one by each policy, never leaving; prints unallocated GPU % per arrived level (mean±sd "
      "over seeds) next to the published FGD results when known. --mode replay: pods arrive and "
      "leave at the trace's times and wait in a queue when they do not fit; compares shared with "
      "whole-GPU allocation.",
      "vgpu sim");
  SimFlags f;
  const std::string data = DataDir() + "/alibaba-gpu-v2023/";
  f.nodes = data + "openb_node_list_gpu_node.csv";
  f.pods = data + "openb_pod_list_default.csv";
  app.add_option("--nodes", f.nodes, "Node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
      ->capture_default_str();
  app.add_option("--pods", f.pods,
                 "Pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec])")
      ->capture_default_str();
  app.add_option("--policy", f.policy,
                 "Policies to run, comma-separated, or 'all' (replay mode default: default)")
      ->capture_default_str();
  app.add_option("--seeds", f.seeds,
                 "Seeds: a range 42-51 or a list 42,43 (replay mode default: 42)")
      ->capture_default_str();
  app.add_option("--inflate", f.inflate, "Stop when this multiple of the GPU capacity has arrived")
      ->capture_default_str();
  app.add_option("--csv", f.csv,
                 "Write every run's levels to this CSV (replay: the time series of every run)");
  app.add_option("--svg", f.svg,
                 "Write a chart to this SVG: unallocated % vs arrived % (replay: allocated GPU % "
                 "over time, shared and whole)");
  app.add_option("--published", f.published,
                 std::string("Published results to compare with (default: ") + kPublishedFile +
                     " next to the pod list, if present)");
  app.add_flag("--json", f.json, "Print a JSON summary instead of the table");
  app.add_option("--threads", f.threads, "Parallel runs (0 = one per core)")->capture_default_str();
  app.add_option("--option", f.options, "Policy option policy:key=value (repeatable)");
  app.add_flag("--quiet", f.quiet, "No progress bar or timing on stderr");
  std::string mode = "snapshot";
  app.add_option("--mode", mode, "snapshot (the FGD protocol) or replay (arrivals and departures)")
      ->check(CLI::IsMember({"snapshot", "replay"}))
      ->capture_default_str();
  ReplayFlags replay;
  const std::vector<std::string> replay_only = AddReplayFlags(app, &replay);
  app.footer(SimHelpFooter());
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  if (mode == "replay") {
    for (const char* flag : {"--inflate", "--published"}) {
      if (app.count(flag) > 0) {
        return ReportStatus(kCommand, Status::InvalidArgument(std::string(flag) +
                                                              " applies only to --mode snapshot"));
      }
    }
    SimCommonFlags c;
    c.nodes = f.nodes;
    c.pods = f.pods;
    c.policy = f.policy;
    c.policy_given = app.count("--policy") > 0;
    c.seeds = f.seeds;
    c.seeds_given = app.count("--seeds") > 0;
    c.csv = f.csv;
    c.svg = f.svg;
    c.json = f.json;
    c.quiet = f.quiet;
    c.threads = f.threads;
    c.options = f.options;
    return ReportStatus(kCommand, RunReplayMode(c, replay));
  }
  for (const std::string& flag : replay_only) {
    if (app.count(flag) > 0) {
      return ReportStatus(kCommand,
                          Status::InvalidArgument(flag + " applies only to --mode replay"));
    }
  }
  return ReportStatus(kCommand, RunSnapshotMode(f));
}

}  // namespace vgpu::cli
