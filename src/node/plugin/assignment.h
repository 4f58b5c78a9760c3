// The scheduler's decision for one pod, as the node daemon reads it from the pod's annotations.
// The annotations are parsed by the scheduler extender's own parser (k8s/pod_assignment.h,
// `k8s::AssignmentOfPod`), so both sides read the same contract with the same code:
//
//   vgpu.io/assigned-gpus = {"version": 1, "node": "gpu-7",
//     "reserved": {"milli": 300, "memory_mib": 4096},
//     "containers": [{"name": "main", "init": false, "priority": 1,
//                     "gpus": [{"uuid": "GPU-...", "index": 0, "milli": 300,
//                               "memory_mib": 4096, "cores": 30}]}]}
//   vgpu.io/assigned-at   = "2025-06-01T12:00:00.250Z"
//
// or, for pods placed by HAMi's scheduler (during a migration):
//
//   hami.io/vgpu-devices-allocated = "GPU-a,NVIDIA,4096,30:;GPU-b,NVIDIA,2048,0:;"
//   hami.io/vgpu-node = "gpu-7"     hami.io/bind-time = "1748779200" (Unix seconds)
//
// HAMi's text lists the pod's spec.containers in order (';' between containers, ':' after each
// GPU: UUID, vendor, memory in MiB, cores in percent, 0 = not throttled); the daemon gives the
// i-th entry to the i-th app container of the pod spec. HAMi carries no priority (-1).
//
// This file turns that parse into what the daemon needs: per container, each GPU's memory limit
// in bytes and SM limit (cores, 1..100; 100 = not throttled). The daemon ignores "milli" and
// "reserved" (the scheduler's bookkeeping). It is stricter than the scheduler about what it
// uses, since a misread limit is worse than a pod that does not start: container names must be
// valid and distinct, each container names 1..16 distinct GPUs, each with a positive memory
// limit.
//
// The annotation says which GPUs, not which units: kubelet only knows unit IDs, and the node
// daemon decides which free unit of each GPU a container gets (AssignmentStore).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "common/result.h"
#include "k8s/wire/pod_assignment.h"
#include "node/cluster/cluster.h"
#include "slice/compute_settings.h"

namespace vgpu::node {

inline constexpr const char* kAssignmentAnnotation = "vgpu.io/assigned-gpus";
inline constexpr const char* kAssignedAtAnnotation = "vgpu.io/assigned-at";
inline constexpr const char* kInventoryAnnotation = "vgpu.io/gpu-inventory";
inline constexpr const char* kHamiAllocatedAnnotation = k8s::kHamiAllocatedAnnotation;
inline constexpr const char* kHamiNodeAnnotation = k8s::kHamiNodeAnnotation;
inline constexpr const char* kHamiBindTimeAnnotation = "hami.io/bind-time";

struct AssignedDevice {
  std::string uuid;
  int index = 0;  // NVML index on the node (informational; the UUID decides; -1 from HAMi)
  uint64_t memory_bytes = 0;
  int cores = 100;
  // The MIG instance the container runs in on this GPU (the contract's "mig"), if any; the
  // limits above then apply inside the instance.
  std::optional<k8s::AssignedMig> mig = std::nullopt;
};

struct ContainerAssignment {
  std::string name;
  bool init = false;
  int priority = -1;  // -1: not given
  std::vector<AssignedDevice> devices;
  // From the pod's vgpu.io/compute annotations (compute_settings.h), not from the assignment.
  slice::ComputeSettings compute;
  bool rank_order = false;  // `devices` are the container's CUDA order (k8s/pod_assignment.h)
  // UUIDs of `devices`, sorted.
  std::vector<std::string> GpuUuids() const;
};

struct PodAssignment {
  std::string node;
  std::vector<ContainerAssignment> containers;
  k8s::AssignmentSource source = k8s::AssignmentSource::kVgpu;
};

// The daemon's view of the scheduler's parse. `app_containers`: the pod's spec.containers
// names in order, which HAMi's positional entries ("#0", "#1", ...) are resolved against.
// Errors are kInvalidArgument naming the container and GPU.
Result<PodAssignment> FromScheduler(const k8s::PodAssignment& assignment,
                                    const std::vector<std::string>& app_containers);

// The assignment `pod` carries (vgpu's, else HAMi's), std::nullopt when none. Errors name the
// pod and the annotation.
Result<std::optional<PodAssignment>> AssignmentOfPod(const PodInfo& pod);

// When the pod was assigned, in milliseconds since the epoch: vgpu.io/assigned-at, else
// hami.io/bind-time; 0 when neither parses.
int64_t AssignedAtMillis(const PodInfo& pod);

// Parses a vgpu.io/assigned-gpus value (k8s::ParseAssignment, then FromScheduler). Errors are
// kInvalidArgument naming the annotation and the field.
Result<PodAssignment> ParseAssignment(std::string_view json);

// Serialises an assignment in the vgpu format (k8s::FormatAssignment; tests and tools use it).
std::string FormatAssignment(const PodAssignment& assignment);

// Milliseconds since the epoch of an RFC 3339 UTC time ("2025-06-01T12:00:00.250Z"); 0 when it
// does not parse.
int64_t ParseTimestampMillis(std::string_view text);

// Parses a Kubernetes Pod object (JSON, as the API server returns it) into PodInfo.
Result<PodInfo> ParsePodJson(std::string_view json);
// Parses a PodList (`{"items": [...]}`) or a JSON array of pods.
Result<std::vector<PodInfo>> ParsePodListJson(std::string_view json);

}  // namespace vgpu::node
