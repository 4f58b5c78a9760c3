// Joint CPU/GPU fragmentation of a node with respect to a workload: FGD's GPU fragmentation
// (frag.h) plus the GPU capacity that the node's free CPU cannot feed.
//
// For one GPU spec m (CPU c, k GPUs of `milli` each, allowed models) and node n with free CPU C and
// GPU free milli f_i, let a GPU be usable for m when its model is allowed and f_i >= milli, and
//   U     = free milli on the usable GPUs,
//   slots = how many m-pods the GPUs alone could take: sum_i floor(f_i / milli) over usable GPUs
//           when k = 1, floor(#usable / k) otherwise,
//   fed   = how many m-pods the free CPU could take: floor(C / c) (unbounded when c = 0).
// Then
//   J_n(m) = sum_i f_i                                  if m is CPU-only, C < c or #usable < k
//          = (free milli on unusable GPUs)              otherwise (FGD's F_n(m)), plus
//            w_cpu * U * (1 - fed / slots)              when fed < slots,
// i.e. if only m-pods came, the share of the usable capacity that would stay idle because the
// node's CPU runs out first. J_n(M) = sum_m p_m J_n(m). With w_cpu = 0 this is FGD's F_n(M).
//
// JointFragModel groups M by (milli, models) as FragModel does: one pass over the node's GPUs per
// group, then O(1) per spec. Immutable after construction; const methods are thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sched/cluster.h"
#include "sched/workload.h"

namespace vgpu::sched {

// J_n(m) for one spec, straight from the definition (reference and tests).
double SpecJointFrag(const WorkloadSpec& m, double cpu_weight, int64_t cpu_free,
                     std::span<const int32_t> gpu_free, std::span<const ModelId> gpu_models);

class JointFragModel {
 public:
  JointFragModel() = default;
  // cpu_mix: instead of the per-spec shortfall, one term per node,
  //   w_cpu * (sum of GPU spec weights) * max(0, sum_i f_i - C / rho),
  // rho = the workload's mean CPU per GPU milli over its GPU specs.
  // mem_per_milli > 0 (mix form only): the node's free memory feeds GPU milli too, at that many
  // MiB per GPU milli, and the shortfall is max(0, sum_i f_i - min(C / rho, Mem / mem_per_milli)).
  JointFragModel(std::span<const WorkloadSpec> workload, double cpu_weight, bool cpu_mix = false,
                 double mem_per_milli = 0);

  bool empty() const { return workload_.empty(); }
  std::span<const WorkloadSpec> workload() const { return workload_; }

  // J_n(M) for a node state.
  double NodeFrag(int64_t cpu_free, std::span<const int32_t> gpu_free,
                  std::span<const ModelId> gpu_models, int64_t mem_free = INT64_MAX) const;
  double NodeFrag(const Cluster& c, NodeId n) const;

 private:
  struct Group {  // specs sharing (milli, models, num_gpus)
    int32_t num_gpus = 0;
    std::vector<int64_t> cpu;
    std::vector<double> weight;
  };
  struct Probe {  // specs sharing (milli, models)
    int32_t gpu_milli = 0;
    ModelSet models;
    std::vector<Group> groups;
  };
  std::vector<WorkloadSpec> workload_;
  double cpu_weight_ = 0;
  double cpu_only_weight_ = 0;
  bool cpu_mix_ = false;
  double cpu_per_milli_ = 0;  // rho
  double mem_per_milli_ = 0;
  std::vector<Probe> probes_;
};

}  // namespace vgpu::sched
