// Helpers for the engine's unit tests: small clusters and requests written inline.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "sched/cluster.h"
#include "sched/types.h"
#include "sched/workload.h"

namespace vgpu::sched::testing {

// A node with `gpus` GPUs of model `model` (memory `gpu_mem` MiB each).
inline NodeSpec MakeNode(std::string name, int64_t cpu, int64_t mem, int gpus, ModelId model = 0,
                         int64_t gpu_mem = 0) {
  NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = cpu;
  n.memory_mib = mem;
  n.gpus.assign(static_cast<size_t>(gpus), GpuSpec{model, gpu_mem});
  return n;
}

inline PodRequest Pod(int64_t cpu, int32_t num_gpus = 0, int32_t gpu_milli = 0, int64_t mem = 0) {
  PodRequest r;
  r.cpu_milli = cpu;
  r.memory_mib = mem;
  r.num_gpus = num_gpus;
  r.gpu_milli = gpu_milli;
  return r;
}

// A workload spec of `weight`: `num` GPUs of `milli` each (on `models`; all when empty) and `cpu`.
inline WorkloadSpec Spec(int64_t cpu, int32_t num, int32_t milli, double weight,
                         ModelSet models = {}) {
  return {
      .cpu_milli = cpu, .gpu_milli = milli, .num_gpus = num, .models = models, .weight = weight};
}

inline Placement On(NodeId n, std::initializer_list<int> gpus) {
  Placement p;
  p.node = n;
  for (int g : gpus) p.gpus |= GpuSet{1} << g;
  return p;
}

}  // namespace vgpu::sched::testing
