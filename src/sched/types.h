// Value types of the placement engine: node and GPU specs, pod requests, placements.
//
// Units: CPU in milli-cores, memory in MiB, GPU compute in milli-GPUs (1000 = one whole GPU).
// A pod asks for `num_gpus` distinct GPUs and `gpu_milli` of each; 0 GPUs means a CPU-only pod.
// `gpu_memory_mib` (HAMi's `nvidia.com/gpumem`) is optional: 0 means the pod states no GPU memory,
// and the cluster then charges it memory in proportion to its compute share (see cluster.h).
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "sched/model_set.h"

namespace vgpu::sched {

using NodeId = uint32_t;
// Identifies a reserved pod; chosen by the caller (the simulator numbers pods, the Kubernetes
// extender maps pod UIDs to keys).
using PodKey = uint64_t;

inline constexpr int32_t kGpuMilli = 1000;  // compute of one whole GPU
inline constexpr int kMaxGpusPerNode = 64;  // GPU indices fit a GpuSet

// A set of GPU indices on one node: bit i = GPU i.
using GpuSet = uint64_t;
inline int GpuCount(GpuSet s) { return std::popcount(s); }
inline bool HasGpu(GpuSet s, int i) { return ((s >> i) & 1u) != 0; }
std::vector<int> GpuIndices(GpuSet s);
// Calls f(i) for each GPU index i in `s`, lowest first.
template <typename F>
void ForEachGpu(GpuSet s, F&& f) {
  while (s != 0) {
    f(std::countr_zero(s));
    s &= s - 1;
  }
}

struct GpuSpec {
  ModelId model = 0;
  int64_t memory_mib = 0;  // 0 = unknown (memory is then not tracked on this GPU)
};

struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::vector<GpuSpec> gpus;
};

struct PodRequest {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpus = 0;
  int32_t gpu_milli = 0;       // per GPU, 1..1000 when num_gpus > 0, else 0
  int64_t gpu_memory_mib = 0;  // per GPU; 0 = not stated
  ModelSet models;             // allowed GPU models; empty = any
  // The pod's GPUs must be NVLink-connected (vgpu.io/topology: require-nvlink,
  // topo/nvlink_sets.h). The engine has no topology: the filters that know a node's enforce it.
  bool require_nvlink = false;

  bool IsCpuOnly() const { return num_gpus == 0; }
  // A pod that takes part of one GPU (the FGD paper's "GPU-sharing" pod).
  bool IsSharing() const { return num_gpus == 1 && gpu_milli < kGpuMilli; }
  int64_t TotalGpuMilli() const { return int64_t{num_gpus} * gpu_milli; }

  friend bool operator==(const PodRequest&, const PodRequest&) = default;
};

struct PodRequestHash {
  size_t operator()(const PodRequest& r) const;
};

// Checks that a request is well-formed: non-negative values, num_gpus <= kMaxGpusPerNode,
// gpu_milli in 1..1000 exactly when num_gpus > 0. kInvalidArgument otherwise.
Status ValidateRequest(const PodRequest& r);

// Where a pod goes: a node and the exact GPUs on it (empty set for CPU-only pods).
struct Placement {
  NodeId node = 0;
  GpuSet gpus = 0;
  friend bool operator==(const Placement&, const Placement&) = default;
};

// The pod's GPU class used by GPU clustering: -1 CPU-only, 0 sharing (part of a GPU), k >= 1:
// k whole GPUs.
inline int GpuClassOf(const PodRequest& r) {
  if (r.num_gpus == 0) return -1;
  if (r.gpu_milli < kGpuMilli) return 0;
  return r.num_gpus;
}

}  // namespace vgpu::sched
