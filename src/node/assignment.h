// The scheduler's decision for one pod, as the node daemon reads it from the pod annotation
// `vgpu.io/assigned-gpus` (written by the vgpu scheduler extender before it binds the pod):
//
//   {"version": 1,
//    "containers": [
//      {"name": "main", "priority": 1,
//       "devices": [{"uuid": "GPU-...", "unit": 3, "memoryBytes": 8589934592, "cores": 30}]}]}
//
// One entry per container that asked for GPUs, one device per GPU it gets. `unit` is the index
// of the unit (see unit_id.h) the container takes on that GPU; the unit IDs of all containers of
// all live pods on a node are distinct, so the unit IDs kubelet passes to Allocate name exactly
// one container of one pod. `memoryBytes` is the memory limit on that GPU, `cores` the compute
// share in percent (1..100; 100 = the whole GPU), `priority` 0 (high) or 1 (low, the default).
//
// The parser is strict: anything it does not understand is an error naming the field, because
// a misread limit is worse than a pod that does not start.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "node/cluster.h"

namespace vgpu::node {

inline constexpr const char* kAssignmentAnnotation = "vgpu.io/assigned-gpus";
inline constexpr const char* kInventoryAnnotation = "vgpu.io/gpu-inventory";

struct AssignedDevice {
  std::string uuid;
  int unit = 0;
  uint64_t memory_bytes = 0;
  int cores = 100;
};

struct ContainerAssignment {
  std::string name;
  int priority = 1;
  std::vector<AssignedDevice> devices;
  // Unit IDs of `devices`, sorted.
  std::vector<std::string> UnitIds() const;
};

struct PodAssignment {
  std::vector<ContainerAssignment> containers;
};

// Parses the annotation value. Errors are kInvalidArgument with the JSON path of the bad field.
Result<PodAssignment> ParseAssignment(std::string_view json);

// Serialises an assignment in the format above (tests and tools use it).
std::string FormatAssignment(const PodAssignment& assignment);

// Parses a Kubernetes Pod object (JSON, as the API server returns it) into PodInfo.
Result<PodInfo> ParsePodJson(std::string_view json);
// Parses a PodList (`{"items": [...]}`) or a JSON array of pods.
Result<std::vector<PodInfo>> ParsePodListJson(std::string_view json);

}  // namespace vgpu::node
