// vgpu bench topo: job-arrival sequences replayed on topology presets with vgpu's GPU set choice,
// go-gpuallocator's besteffort, HAMi's greedy subset and lowest-index-first (topo/bench.h).
//
//   vgpu bench topo [--preset NAME,...] [--jobs N] [--seeds A-B] [--mean-duration D] [--csv]
//                   [--patterns]
//
// One row per preset and policy: multi-GPU jobs placed, mean predicted bus bandwidth, share of
// jobs given the best available set, share NUMA-minimal, decision time p50/p99/max (microseconds
// of the deciding thread's CPU time). 16-GPU presets also time besteffort's single decision on the
// whole node for sizes 2 and 4 (its partition search: 2.0 and 2.6 million partitions).
// --patterns instead times one decision per communication pattern on each empty node of up to 8
// GPUs (set and rank order, a fresh Evaluator: nothing memoised), microseconds of CPU time. The
// flags are read here; the run is bench/topo.h's.
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/topo.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "sim/options.h"
#include "topo/presets.h"

namespace vgpu::cli {

int RunBenchTopo(int argc, char** argv) {
  std::string presets = "hgx-h200,dgx-a100,dgx1-volta,pcie4-nvbridge,pcie8-2socket,pcie8-switch";
  std::string seeds = "1-5";
  int jobs = 400;
  double mean_duration = 3;
  bool csv = false;
  CLI::App app(
      "Replays job-arrival sequences (sizes 1, 2, 4, 8 with departures) on topology presets and "
      "compares vgpu's GPU set choice with go-gpuallocator's besteffort, HAMi's greedy subset "
      "choice and lowest-index-first (docs/topology.md).",
      "vgpu bench topo");
  app.add_option("--preset", presets,
                 "comma-separated presets (default the six server shapes; also dgx2, "
                 "pcie16-switch: vgpu topo --list-presets)");
  app.add_option("--jobs", jobs, "arrivals per sequence (default 400)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--seeds", seeds, "seeds: A, A-B or a list of both joined by ',' (default 1-5)");
  app.add_option("--mean-duration", mean_duration, "mean job duration in arrivals (default 3)")
      ->check(CLI::Range(0.5, 1000.0));
  app.add_flag("--csv", csv, "CSV output");
  bool patterns = false;
  app.add_flag("--patterns", patterns,
               "time one set-and-rank-order decision per communication pattern on each empty "
               "node (up to 8 GPUs) instead of the job sequences");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  Result<std::vector<uint64_t>> seed_list = sim::ParseSeedList(seeds);
  if (!seed_list) return ReportStatus("bench topo", seed_list.error().WithContext("--seeds"));
  std::vector<topo::Topology> topologies;
  std::stringstream list(presets);
  for (std::string name; std::getline(list, name, ',');) {
    std::optional<topo::Topology> t = topo::Preset(name);
    if (!t) {
      return ReportStatus("bench topo",
                          Status::InvalidArgument("--preset \"" + name + "\": unknown preset"));
    }
    topologies.push_back(*t);
  }
  bench::TopoRun run;
  run.topologies = std::move(topologies);
  run.seeds = *seed_list;
  run.jobs = jobs;
  run.mean_duration = mean_duration;
  run.csv = csv;
  if (patterns) {
    bench::RunTopoPatterns(run, stdout);
  } else {
    bench::RunTopo(run, stdout);
  }
  return kExitOk;
}

}  // namespace vgpu::cli
