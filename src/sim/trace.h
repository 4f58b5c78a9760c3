// Loading the Alibaba GPU-sharing trace (cluster-trace-gpu-v2023): node lists and pod lists.
//
// Node list columns: sn, cpu_milli, memory_mib, gpu, model [, gpu_memory_mib].
//   Every node gets `gpu` GPUs of `model`; GPU memory comes from the optional column, else from
//   the known size of the model (T4, P100, V100M16: 16 GiB; V100M32: 32 GiB; A10: 24 GiB), else
//   0 = unknown. A node without GPUs may leave `model` empty.
// Pod list columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli [, gpu_spec] [, topology];
//   other columns are ignored (the multigpu files have only the first five). gpu_spec lists the
//   allowed models joined by '|' (empty = any); every name must be a model of the node list.
//   topology is vgpu.io/topology's value: empty, or require-nvlink (a pod of 2 or more GPUs that
//   must get NVLink-connected GPUs; only the replay with server shapes models it).
// Errors (kInvalidArgument, kNotFound for unknown models, kIoError for unreadable files) name the
// file, line and column: a missing column, text in a number field, a negative value, an empty file
// or a file with a header only, a GPU share outside 0..1000 or inconsistent with num_gpu, an
// unknown GPU model, a duplicate node name.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "sched/model_set.h"
#include "sched/types.h"

namespace vgpu::sim {

struct TracePod {
  std::string name;
  sched::PodRequest request;
};

// Loads a node list; interns its GPU models into `models`.
Result<std::vector<sched::NodeSpec>> LoadNodeList(const std::string& path,
                                                  sched::ModelRegistry* models);
// Loads a pod list; GPU models in gpu_spec must already be in `models`.
Result<std::vector<TracePod>> LoadPodList(const std::string& path,
                                          const sched::ModelRegistry& models);

// Known GPU memory of a model in MiB, 0 when unknown.
int64_t KnownGpuMemoryMib(std::string_view model);

}  // namespace vgpu::sim
