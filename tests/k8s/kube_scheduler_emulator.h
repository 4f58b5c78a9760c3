// KubeSchedulerEmulator: the steps of kube-scheduler's scheduling cycle that decide where a pod
// goes when an extender is configured, written from kube-scheduler's source (pkg/scheduler:
// schedule_one.go, framework/plugins/noderesources), for tests and benchmarks that drive an
// extender as kube-scheduler would:
//   - NodeResourcesFit's filter: the pod count, CPU, memory and <prefix>/gpu units against each
//     node's allocatable minus the requests of the pods kube-scheduler has placed there (its
//     cache, including pods it assumed before their binding); the extender-only resources
//     (gpumem, gpucores, ...) are ignored, as the deployed ignoredResources say;
//   - optionally its default scores: NodeResourcesFit LeastAllocated (CPU and memory, weight 1)
//     and NodeResourcesBalancedAllocation (weight 1); the other default plugins give every node
//     the same score for these pods (no affinity, taints, topology spread or images);
//   - the extender's priorities, times the extender's weight, times MaxNodeScore /
//     MaxExtenderPriority (10);
//   - selectHost: the highest total, ties broken uniformly at random (reservoir sampling) with
//     the emulator's own seeded generator; a single feasible node is taken without scoring.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/rng.h"

namespace vgpu::k8s::testing {

struct EmulatedNode {
  std::string name;
  int64_t cpu_milli = 0, memory_mib = 0, pods = 110, gpu_units = 0;  // allocatable
};

struct EmulatedPod {
  int64_t cpu_milli = 0, memory_mib = 0, gpu_units = 0;  // requests
};

class KubeSchedulerEmulator {
 public:
  struct Options {
    bool default_scores = false;  // LeastAllocated + BalancedAllocation
    int64_t extender_weight = 1;
    uint64_t seed = 42;
  };
  KubeSchedulerEmulator(std::vector<EmulatedNode> nodes, Options options);

  const std::vector<EmulatedNode>& nodes() const { return nodes_; }
  // Indices of the nodes NodeResourcesFit passes, in node order.
  std::vector<size_t> Feasible(const EmulatedPod& pod) const;
  // The chosen index among `feasible` given the extender's 0..10 priorities (same order).
  size_t Select(const EmulatedPod& pod, const std::vector<size_t>& feasible,
                const std::vector<int64_t>& extender_priorities);
  // kube-scheduler's assume (before the binding) and its undo.
  void Assume(size_t node, const EmulatedPod& pod);
  void Forget(size_t node, const EmulatedPod& pod);

 private:
  int64_t DefaultScore(size_t node, const EmulatedPod& pod) const;

  std::vector<EmulatedNode> nodes_;
  std::vector<EmulatedPod> requested_;  // per node: the sum of its pods
  std::vector<int64_t> pod_count_;
  Options options_;
  Rng rng_;
};

}  // namespace vgpu::k8s::testing
