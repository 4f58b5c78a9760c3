#include "bench/topo.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "topo/bench.h"
#include "topo/besteffort.h"
#include "topo/choose.h"

namespace vgpu::bench {
namespace {

// Decision time is the deciding thread's CPU time, so other load on the machine does not count.
int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// One ChooseSet decision per pattern on the empty node (docs/topology.md §3).
void TimePatterns(const topo::Topology& t, bool csv, FILE* out) {
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
    std::fprintf(out,
                 csv ? "%s,%s,%d,%.1f,%.6f\n" : "%-15s %-10s %3d GPUs %10.1f us  (%.6f s/step)\n",
                 t.name.c_str(), text.c_str(), k, us, c.comm_seconds);
  }
}

}  // namespace

void RunTopo(const TopoRun& run, FILE* out) {
  if (run.csv) {
    std::fprintf(out,
                 "preset,policy,jobs_placed,multi_gpu_jobs,mean_bus_gbps,best_share,numa_share,"
                 "p50_us,p99_us,max_us\n");
  } else {
    std::fprintf(out, "%-15s %-13s %7s %10s %8s %8s %8s %8s %9s\n", "preset", "policy", "multi",
                 "bus GB/s", "best", "numa", "p50 us", "p99 us", "max us");
  }
  for (const topo::Topology& t : run.topologies) {
    for (topo::BenchPolicy policy : topo::AllBenchPolicies()) {
      if (policy == topo::BenchPolicy::kBestEffort && t.size() > 8) continue;  // timed below
      topo::BenchResult sum;
      std::vector<double> p99s;
      int runs = 0;
      for (uint64_t seed : run.seeds) {
        auto sequence = topo::MakeJobSequence(t.size(), run.jobs, run.mean_duration, seed);
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
      const char* fmt = run.csv ? "%s,%s,%d,%d,%.2f,%.4f,%.4f,%.1f,%.1f,%.1f\n"
                                : "%-15s %-13s %7d %10.2f %8.4f %8.4f %8.1f %8.1f %9.1f\n";
      if (run.csv) {
        std::fprintf(out, fmt, t.name.c_str(), topo::BenchPolicyName(policy), sum.placed,
                     sum.multi_placed, sum.mean_bus_gbps / m, sum.best_share / m,
                     sum.numa_share / m, sum.p50_decision_us, sum.p99_decision_us,
                     sum.max_decision_us);
      } else {
        std::fprintf(out, "%-15s %-13s %7d %10.2f %8.4f %8.4f %8.1f %8.1f %9.1f\n", t.name.c_str(),
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
        std::fprintf(out,
                     run.csv ? "%s,besteffort-one-decision-size-%d,,,,,,,,%.1f\n"
                             : "%-15s besteffort: one decision, size %d on all GPUs: %.1f us\n",
                     t.name.c_str(), size, static_cast<double>(ThreadCpuNs() - start) / 1000.0);
      }
    }
  }
}

void RunTopoPatterns(const TopoRun& run, FILE* out) {
  if (run.csv) {
    std::fprintf(out, "preset,pattern,gpus,decision_us,comm_seconds\n");
  } else {
    std::fprintf(out, "%-15s %-10s %8s %13s\n", "preset", "pattern", "gpus", "decision");
  }
  for (const topo::Topology& t : run.topologies) TimePatterns(t, run.csv, out);
}

}  // namespace vgpu::bench
