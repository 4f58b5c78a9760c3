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
// GPUs (set and rank order, a fresh Evaluator: nothing memoised), microseconds of CPU time.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "sim/options.h"
#include "topo/bench.h"
#include "topo/besteffort.h"
#include "topo/choose.h"
#include "topo/presets.h"

namespace vgpu::cli {
namespace {

// Decision time is the deciding thread's CPU time, so other load on the machine does not count.
int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// One ChooseSet decision per pattern on the empty node (docs/topology.md §3).
void TimePatterns(const topo::Topology& t, bool csv) {
  const int n = t.size();
  const std::vector<std::pair<std::string, int>> patterns = {
      {"pipeline", 4}, {"pipeline", n}, {"tp=2,dp=2", 4}, {"tp=2,dp=" + std::to_string(n / 2), n}};
  for (size_t i = 0; i < patterns.size(); ++i) {
    const auto& [text, k] = patterns[i];
    if (i % 2 == 1 && patterns[i - 1] == patterns[i]) continue;  // a 4-GPU node
    auto pattern = topo::ParseCommPattern(text, k);
    if (!pattern || k > n || n > 8) continue;
    topo::Evaluator ev(t);
    const int64_t start = ThreadCpuNs();
    topo::SetChoice c = topo::ChooseSet(ev, (topo::GpuMask{1} << n) - 1, k, *pattern);
    const double us = static_cast<double>(ThreadCpuNs() - start) / 1000.0;
    std::printf(csv ? "%s,%s,%d,%.1f,%.6f\n" : "%-15s %-10s %3d GPUs %10.1f us  (%.6f s/step)\n",
                t.name.c_str(), text.c_str(), k, us, c.comm_seconds);
  }
}

}  // namespace

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
  if (patterns) {
    if (csv) {
      std::printf("preset,pattern,gpus,decision_us,comm_seconds\n");
    } else {
      std::printf("%-15s %-10s %8s %13s\n", "preset", "pattern", "gpus", "decision");
    }
    for (const topo::Topology& t : topologies) TimePatterns(t, csv);
    return kExitOk;
  }
  if (csv) {
    std::printf(
        "preset,policy,jobs_placed,multi_gpu_jobs,mean_bus_gbps,best_share,numa_share,"
        "p50_us,p99_us,max_us\n");
  } else {
    std::printf("%-15s %-13s %7s %10s %8s %8s %8s %8s %9s\n", "preset", "policy", "multi",
                "bus GB/s", "best", "numa", "p50 us", "p99 us", "max us");
  }
  for (const topo::Topology& t : topologies) {
    for (topo::BenchPolicy policy : topo::AllBenchPolicies()) {
      if (policy == topo::BenchPolicy::kBestEffort && t.size() > 8) continue;  // timed below
      topo::BenchResult sum;
      std::vector<double> p99s;
      int runs = 0;
      for (uint64_t seed : *seed_list) {
        auto sequence = topo::MakeJobSequence(t.size(), jobs, mean_duration, seed);
        topo::BenchResult r = topo::RunBench(t, sequence, policy, ThreadCpuNs);
        sum.placed += r.placed;
        sum.multi_placed += r.multi_placed;
        sum.mean_bus_gbps += r.mean_bus_gbps * r.multi_placed;
        sum.best_share += r.best_share * r.multi_placed;
        sum.numa_share += r.numa_share * r.multi_placed;
        sum.p50_decision_us = std::max(sum.p50_decision_us, r.p50_decision_us);
        sum.p99_decision_us = std::max(sum.p99_decision_us, r.p99_decision_us);
        sum.max_decision_us = std::max(sum.max_decision_us, r.max_decision_us);
        ++runs;
      }
      double m = sum.multi_placed > 0 ? sum.multi_placed : 1;
      const char* fmt = csv ? "%s,%s,%d,%d,%.2f,%.4f,%.4f,%.1f,%.1f,%.1f\n"
                            : "%-15s %-13s %7d %10.2f %8.4f %8.4f %8.1f %8.1f %9.1f\n";
      if (csv) {
        std::printf(fmt, t.name.c_str(), topo::BenchPolicyName(policy), sum.placed,
                    sum.multi_placed, sum.mean_bus_gbps / m, sum.best_share / m, sum.numa_share / m,
                    sum.p50_decision_us, sum.p99_decision_us, sum.max_decision_us);
      } else {
        std::printf("%-15s %-13s %7d %10.2f %8.4f %8.4f %8.1f %8.1f %9.1f\n", t.name.c_str(),
                    topo::BenchPolicyName(policy), sum.multi_placed, sum.mean_bus_gbps / m,
                    sum.best_share / m, sum.numa_share / m, sum.p50_decision_us,
                    sum.p99_decision_us, sum.max_decision_us);
      }
      (void)runs;
    }
    if (t.size() > 8) {
      std::vector<int> all;
      for (int g = 0; g < t.size(); ++g) all.push_back(g);
      for (int size : {2, 4}) {
        int64_t start = ThreadCpuNs();
        topo::BestEffortAllocate(t, all, {}, size);
        std::printf(csv ? "%s,besteffort-one-decision-size-%d,,,,,,,,%.1f\n"
                        : "%-15s besteffort: one decision, size %d on all GPUs: %.1f us\n",
                    t.name.c_str(), size, static_cast<double>(ThreadCpuNs() - start) / 1000.0);
      }
    }
  }
  return kExitOk;
}

}  // namespace vgpu::cli
