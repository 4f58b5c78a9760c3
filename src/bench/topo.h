// `vgpu bench topo`: job-arrival sequences replayed on topology presets with vgpu's GPU set
// choice, go-gpuallocator's besteffort, HAMi's greedy subset and lowest-index-first
// (topo/bench.h). Decision times are the deciding thread's CPU time, so other load on the machine
// does not count. src/cli's cmd_bench_topo.cc reads the flags.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "topo/topology.h"

namespace vgpu::bench {

// A run as the flags give it (checked there).
struct TopoRun {
  std::vector<topo::Topology> topologies;
  std::vector<uint64_t> seeds;  // one sequence per seed
  int jobs = 400;               // arrivals per sequence
  double mean_duration = 3;     // mean job duration in arrivals
  bool csv = false;             // CSV instead of a table
};

// One row per topology and policy, written to `out` as soon as it is done: multi-GPU jobs placed,
// mean predicted bus bandwidth, share of jobs given the best available set, share NUMA-minimal,
// decision time p50/p99/max (microseconds). Topologies of more than 8 GPUs also time besteffort's
// single decision on the whole node for sizes 2 and 4.
void RunTopo(const TopoRun& run, FILE* out);

// One set-and-rank-order decision per communication pattern on each empty node of up to 8 GPUs
// (a fresh Evaluator: nothing memoised), microseconds of CPU time, written to `out`.
void RunTopoPatterns(const TopoRun& run, FILE* out);

}  // namespace vgpu::bench
