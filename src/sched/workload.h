// Workload models: the FGD paper's "target workload" (the typical pod specs and their weights),
// built from a pod list or learned online from the pods seen so far.
//
// A spec is (CPU milli, GPU milli per GPU, GPU count, allowed models); memory is ignored, as in the
// FGD simulator. Typical(): distinct specs ordered by count (descending), ties broken by larger
// CPU, then larger GPU milli, larger GPU count, then the models' text (descending); taken in that
// order until they cover at least `coverage` of all pods counted; weights are counts renormalized
// over the chosen specs so they sum to 1. CPU-only pods are specs too.
//
// WorkloadCounter::Add is O(1) expected; Typical() sorts the distinct specs (O(k log k), k distinct
// specs, a few hundred on the Alibaba trace). Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "sched/model_set.h"
#include "sched/types.h"

namespace vgpu::sched {

struct WorkloadSpec {
  int64_t cpu_milli = 0;
  int32_t gpu_milli = 0;
  int32_t num_gpus = 0;
  ModelSet models;
  int64_t count = 0;
  double weight = 0;  // share of the typical set, sums to 1 over it
};

class WorkloadCounter {
 public:
  void Add(const PodRequest& r, int64_t n = 1);
  int64_t total() const { return total_; }
  size_t distinct() const { return counts_.size(); }

  // The typical set (see above). `names` orders ties by model text; may be null (then by bits).
  std::vector<WorkloadSpec> Typical(const ModelRegistry* names, double coverage = 0.95) const;

 private:
  struct Key {
    int64_t cpu_milli;
    int32_t gpu_milli;
    int32_t num_gpus;
    uint64_t models;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  std::unordered_map<Key, int64_t, KeyHash> counts_;
  int64_t total_ = 0;
};

// Typical set of a pod list (FGD's GetTypicalPods).
std::vector<WorkloadSpec> TypicalWorkload(std::span<const PodRequest> pods,
                                          const ModelRegistry* names, double coverage = 0.95);

}  // namespace vgpu::sched
