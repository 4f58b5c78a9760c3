#include "topo/bench.h"

#include <algorithm>
#include <set>

#include "topo/besteffort.h"
#include "topo/choose.h"

namespace vgpu::topo {
namespace {

// SplitMix64: small, seeded, the same on every platform.
struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) / 9007199254740992.0; }
};

int NumaSpan(const Topology& t, const std::vector<int>& gpus) {
  std::set<int> nodes;
  for (int g : gpus) nodes.insert(t.Gpu(g).numa_node);
  return static_cast<int>(nodes.size());
}

// The fewest NUMA nodes a k-subset of `free` can span.
int FewestNumaNodes(const Topology& t, const std::vector<int>& free, int k) {
  std::vector<int> per_node_counts;
  std::vector<int> nodes;
  for (int g : free) {
    int n = t.Gpu(g).numa_node;
    auto it = std::find(nodes.begin(), nodes.end(), n);
    if (it == nodes.end()) {
      nodes.push_back(n);
      per_node_counts.push_back(1);
    } else {
      ++per_node_counts[it - nodes.begin()];
    }
  }
  std::sort(per_node_counts.rbegin(), per_node_counts.rend());
  int span = 0;
  for (int c : per_node_counts) {
    if (k <= 0) break;
    k -= c;
    ++span;
  }
  return span;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

const char* BenchPolicyName(BenchPolicy p) {
  switch (p) {
    case BenchPolicy::kOurs:
      return "vgpu";
    case BenchPolicy::kBestEffort:
      return "besteffort";
    case BenchPolicy::kHami:
      return "hami";
    case BenchPolicy::kLowestIndex:
      return "lowest-index";
  }
  return "?";
}

std::vector<BenchPolicy> AllBenchPolicies() {
  return {BenchPolicy::kOurs, BenchPolicy::kBestEffort, BenchPolicy::kHami,
          BenchPolicy::kLowestIndex};
}

std::vector<BenchJob> MakeJobSequence(int gpus, int jobs, double mean_duration, uint64_t seed) {
  Rng rng{seed * 0x2545f4914f6cdd1dULL + 1};
  const int kSizes[] = {1, 2, 4, 8};
  const double kWeights[] = {0.35, 0.30, 0.20, 0.15};
  double total = 0;
  for (int i = 0; i < 4; ++i) total += kSizes[i] <= gpus ? kWeights[i] : 0;
  std::vector<BenchJob> out;
  int max_duration = std::max(1, static_cast<int>(2 * mean_duration));
  for (int j = 0; j < jobs; ++j) {
    double u = rng.Uniform() * total;
    int size = 1;
    for (int i = 0; i < 4; ++i) {
      if (kSizes[i] > gpus) continue;
      size = kSizes[i];
      if (u < kWeights[i]) break;
      u -= kWeights[i];
    }
    BenchJob job;
    job.size = size;
    job.arrival = j;
    job.departure = j + 1 + static_cast<int>(rng.Next() % static_cast<uint64_t>(max_duration));
    out.push_back(job);
  }
  return out;
}

BenchResult RunBench(const Topology& t, const std::vector<BenchJob>& jobs, BenchPolicy policy,
                     const std::function<int64_t()>& now_ns) {
  BenchResult r;
  r.policy = policy;
  Evaluator ours(t);   // the policy's own evaluator (memoised across decisions, as in a node)
  Evaluator judge(t);  // the metrics' evaluator
  int n = t.size();
  std::vector<int> owner(n, -1);  // job index holding each GPU
  std::vector<double> decisions;
  double bus_sum = 0;
  int best = 0, numa = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (int g = 0; g < n; ++g) {
      if (owner[g] >= 0 && jobs[owner[g]].departure <= jobs[j].arrival) owner[g] = -1;
    }
    std::vector<int> free;
    for (int g = 0; g < n; ++g) {
      if (owner[g] < 0) free.push_back(g);
    }
    int k = jobs[j].size;
    if (static_cast<int>(free.size()) < k) continue;
    int64_t start = now_ns();
    std::vector<int> got;
    switch (policy) {
      case BenchPolicy::kOurs:
        got = ChooseSet(ours, GpusMask(free), k).gpus;
        break;
      case BenchPolicy::kBestEffort:
        got = BestEffortAllocate(t, free, {}, k);
        break;
      case BenchPolicy::kHami:
        got = HamiAllocate(t, free, k);
        break;
      case BenchPolicy::kLowestIndex:
        got = LowestIndexAllocate(free, k);
        break;
    }
    decisions.push_back(static_cast<double>(now_ns() - start) / 1000.0);
    if (static_cast<int>(got.size()) != k) continue;  // a policy that fails to place: not counted
    for (int g : got) owner[g] = static_cast<int>(j);
    ++r.placed;
    if (k < 2) continue;
    ++r.multi_placed;
    double bw = judge.RingBusBandwidth(GpusMask(got));
    bus_sum += bw;
    if (bw >= BestBusBandwidth(judge, GpusMask(free), k) * (1 - 1e-9)) ++best;
    if (NumaSpan(t, got) <= FewestNumaNodes(t, free, k)) ++numa;
  }
  if (r.multi_placed > 0) {
    r.mean_bus_gbps = bus_sum / r.multi_placed;
    r.best_share = static_cast<double>(best) / r.multi_placed;
    r.numa_share = static_cast<double>(numa) / r.multi_placed;
  }
  r.p50_decision_us = Percentile(decisions, 0.50);
  r.p99_decision_us = Percentile(decisions, 0.99);
  r.max_decision_us = decisions.empty() ? 0 : *std::max_element(decisions.begin(), decisions.end());
  return r;
}

}  // namespace vgpu::topo
