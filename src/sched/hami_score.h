// HAMi's node and GPU ("device") scores (Project-HAMi/HAMi pkg/scheduler/policy), shared by
// policy_hami_binpack.cc and policy_hami_spread.cc.
//
//   node score   = 10 * ( used slots / slots + used milli / total milli + used mem / total mem )
//                  over the node's GPUs, before the placement;
//   device score = 10 * ( (1 + used slots) / slots + (milli + used milli) / 1000
//                        + (mem + used mem) / mem capacity )                  for one GPU.
//
// slots = HAMi's split count per GPU (default 10; a GPU takes at most that many pods). HAMi's
// "cores" percent maps to milli. GPU memory: when the node's GPUs all have a known memory size it
// is used as is (a pod that states none is charged in proportion to its share, cluster.h);
// otherwise the memory term equals the compute term.
// Scores are returned as integers scaled by 1e6 (HAMi computes them in float32).
#pragma once

#include <cmath>

#include "sched/cluster.h"

namespace vgpu::sched {

inline constexpr int kHamiDefaultSplit = 10;
inline constexpr double kHamiScale = 1e6;

inline double HamiNodeScore(const Cluster& c, NodeId n, int split) {
  const auto gpus = c.gpus(n);
  if (gpus.empty()) return 0;
  double slots_used = 0, milli_used = 0, mem_used = 0, mem_total = 0;
  bool memory_known = true;
  for (const GpuState& g : gpus) {
    slots_used += g.pods;
    milli_used += kGpuMilli - g.free_milli;
    memory_known = memory_known && g.memory_capacity_mib > 0;
    mem_used += static_cast<double>(g.memory_capacity_mib - g.memory_free_mib);
    mem_total += static_cast<double>(g.memory_capacity_mib);
  }
  const double count = static_cast<double>(gpus.size());
  const double core = milli_used / (count * kGpuMilli);
  const double mem = memory_known ? mem_used / mem_total : core;
  return 10.0 * (slots_used / (count * split) + core + mem);
}

inline double HamiDeviceScore(const PodRequest& r, const GpuState& g, int split) {
  const double core = static_cast<double>(r.gpu_milli + (kGpuMilli - g.free_milli)) /
                      static_cast<double>(kGpuMilli);
  double mem = core;
  if (g.memory_capacity_mib > 0) {
    const double used = static_cast<double>(g.memory_capacity_mib - g.memory_free_mib);
    mem = (static_cast<double>(Cluster::ChargedGpuMemory(r, g)) + used) /
          static_cast<double>(g.memory_capacity_mib);
  }
  return 10.0 * (static_cast<double>(1 + g.pods) / split + core + mem);
}

// The r.num_gpus fitting GPUs with the highest (binpack) or lowest (spread) device score, lowest
// index first among equals.
GpuSet SelectHamiGpus(const PodRequest& r, const Cluster& c, NodeId n, int split, bool binpack);

}  // namespace vgpu::sched
