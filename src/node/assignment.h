// The scheduler's decision for one pod, as the node daemon reads it from pod annotations that
// the vgpu scheduler extender writes before it binds the pod (format defined with the extender,
// docs/scheduler.md):
//
//   vgpu.io/assigned-gpus = {"version": 1, "node": "gpu-7",
//     "reserved": {"milli": 300, "memory_mib": 4096},
//     "containers": [{"name": "main", "init": false, "priority": 1,
//                     "gpus": [{"uuid": "GPU-...", "index": 0, "milli": 300,
//                               "memory_mib": 4096, "cores": 30}]}]}
//   vgpu.io/assigned-at   = "2025-06-01T12:00:00.250Z"
//
// One entry per container that asked for GPUs, one GPU entry per GPU it gets: the memory limit
// on that GPU (memory_mib), the SM limit the node enforces (cores, 1..100; 100 = not
// throttled), the priority (0 high, 1 low, -1 not given). The node daemon ignores "milli" and
// "reserved" (the scheduler's bookkeeping).
//
// The annotation says which GPUs, not which units: kubelet only knows unit IDs, and the node
// daemon decides which free unit of each GPU a container gets (AssignmentStore).
//
// The parser is strict about what it uses: a misread limit is worse than a pod that does not
// start. Unknown fields are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "node/cluster.h"
#include "node/compute_settings.h"

namespace vgpu::node {

inline constexpr const char* kAssignmentAnnotation = "vgpu.io/assigned-gpus";
inline constexpr const char* kAssignedAtAnnotation = "vgpu.io/assigned-at";
inline constexpr const char* kInventoryAnnotation = "vgpu.io/gpu-inventory";

struct AssignedDevice {
  std::string uuid;
  int index = 0;  // NVML index on the node (informational; the UUID decides)
  uint64_t memory_bytes = 0;
  int cores = 100;
};

struct ContainerAssignment {
  std::string name;
  bool init = false;
  int priority = -1;  // -1: not given
  std::vector<AssignedDevice> devices;
  // From the pod's vgpu.io/compute annotations (compute_settings.h), not from the assignment.
  ComputeSettings compute;
  // UUIDs of `devices`, sorted.
  std::vector<std::string> GpuUuids() const;
};

struct PodAssignment {
  std::string node;
  std::vector<ContainerAssignment> containers;
};

// Parses the annotation value. Errors are kInvalidArgument naming the field.
Result<PodAssignment> ParseAssignment(std::string_view json);

// Serialises an assignment in the format above (tests and tools use it).
std::string FormatAssignment(const PodAssignment& assignment);

// Milliseconds since the epoch of an RFC 3339 UTC time ("2025-06-01T12:00:00.250Z"); 0 when it
// does not parse.
int64_t ParseTimestampMillis(std::string_view text);

// Parses a Kubernetes Pod object (JSON, as the API server returns it) into PodInfo.
Result<PodInfo> ParsePodJson(std::string_view json);
// Parses a PodList (`{"items": [...]}`) or a JSON array of pods.
Result<std::vector<PodInfo>> ParsePodListJson(std::string_view json);

}  // namespace vgpu::node
