// The topology placement benchmark (`vgpu bench topo`, docs/topology.md): a job-arrival sequence
// replayed on one node with each policy, the same jobs in the same order for all of them.
//
// Sequence (deterministic per seed): `jobs` arrivals; sizes 1, 2, 4, 8 (those that fit the node)
// with weights 0.35, 0.30, 0.20, 0.15; each job holds its GPUs for a duration drawn uniformly
// from 1..2*mean_duration arrivals. Before an arrival the jobs whose time is up leave. A job that
// does not fit the free GPUs is skipped; the free count is the same for every policy at every
// step, so every policy sees the same jobs.
// Policies: ours (topo/choose.h), besteffort, hami, lowest-index (topo/besteffort.h).
// Metrics per policy, over the multi-GPU jobs it placed:
//   mean_bus_gbps      mean predicted ring bus bandwidth of the sets given
//   best_share         share of jobs given a set as good as the best any k-subset of the free
//                      GPUs offered at that moment (the model's ring bandwidth, exact)
//   numa_share         share of jobs given a set spanning the fewest NUMA nodes possible then
//   p50/p99 decision   per call, from the `now_ns` clock the caller passes (wall time in the CLI)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "topo/bandwidth.h"

namespace vgpu::topo {

enum class BenchPolicy { kOurs, kBestEffort, kHami, kLowestIndex };
const char* BenchPolicyName(BenchPolicy policy);
std::vector<BenchPolicy> AllBenchPolicies();

struct BenchJob {
  int size = 1;
  int arrival = 0;
  int departure = 0;  // arrival index at which it leaves
};
std::vector<BenchJob> MakeJobSequence(int gpus, int jobs, double mean_duration, uint64_t seed);

struct BenchResult {
  BenchPolicy policy = BenchPolicy::kOurs;
  int placed = 0;        // jobs placed (all sizes)
  int multi_placed = 0;  // jobs of 2 or more GPUs placed
  double mean_bus_gbps = 0;
  double best_share = 0;
  double numa_share = 0;
  double p50_decision_us = 0;
  double p99_decision_us = 0;
  double max_decision_us = 0;
};

// Replays `jobs` with `policy` on `topology`. `now_ns` times each decision (may be a fake).
BenchResult RunBench(const Topology& topology, const std::vector<BenchJob>& jobs,
                     BenchPolicy policy, const std::function<int64_t()>& now_ns);

}  // namespace vgpu::topo
