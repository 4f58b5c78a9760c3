// GPU fragmentation of a node with respect to a target workload (the FGD paper, frag.go).
//
// For one spec m and node n with free CPU c and GPU free milli f_i:
//   F_n(m) = sum_i f_i                    if m is CPU-only, or c < m.cpu, or fewer than m.num_gpus
//                                          GPUs are "usable" (model allowed and f_i >= m.gpu_milli)
//          = sum of f_i over GPUs that are not usable          otherwise.
// F_n(M) = sum_m p_m * F_n(m) over the target workload M (weights p_m sum to 1).
// Cluster fragment = sum_n F_n(M); fragment rate = cluster fragment / total free GPU milli.
//
// FragModel precomputes M grouped by (GPU milli, models): evaluating F_n(M) costs one pass over the
// node's GPUs per distinct (milli, models) pair plus a binary search on CPU, not one per spec.
// Immutable after construction; const methods are thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sched/cluster.h"
#include "sched/workload.h"

namespace vgpu::sched {

// F_n(m) for one spec, straight from the definition (reference and tests).
double SpecFrag(const WorkloadSpec& m, int64_t cpu_free, std::span<const int32_t> gpu_free,
                std::span<const ModelId> gpu_models);

class FragModel {
 public:
  FragModel() = default;
  explicit FragModel(std::span<const WorkloadSpec> workload);

  bool empty() const { return probes_.empty() && cpu_only_weight_ == 0; }
  std::span<const WorkloadSpec> workload() const { return workload_; }

  // F_n(M) for a node state.
  double NodeFrag(int64_t cpu_free, std::span<const int32_t> gpu_free,
                  std::span<const ModelId> gpu_models) const;
  double NodeFrag(const Cluster& c, NodeId n) const;

 private:
  struct Group {  // specs sharing (gpu_milli, models, num_gpus), sorted by cpu
    int32_t num_gpus = 0;
    double weight = 0;
    std::vector<int64_t> cpu;       // ascending
    std::vector<double> ok_weight;  // ok_weight[k] = sum of weights of cpu[0..k)
  };
  struct Probe {  // specs sharing (gpu_milli, models)
    int32_t gpu_milli = 0;
    ModelSet models;
    std::vector<Group> groups;
  };
  std::vector<WorkloadSpec> workload_;
  double cpu_only_weight_ = 0;
  std::vector<Probe> probes_;
};

}  // namespace vgpu::sched
