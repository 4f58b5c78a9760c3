// The scheduler's decision for a pod, recorded as pod annotations before the pod is bound, and
// read back by the node daemon (to give each container its GPUs and limits) and by the scheduler
// itself when it restarts. The contract (documented in docs/scheduler.md):
//
//   vgpu.io/assigned-node = "<node name>"
//   vgpu.io/assigned-at   = RFC 3339 UTC time with milliseconds, e.g. "2025-06-01T12:00:00.250Z"
//   vgpu.io/assigned-gpus = JSON
//   {"version": 1, "node": "gpu-7",
//    "reserved": {"milli": 300, "memory_mib": 4096},        // charged on each GPU of the pod
//    "containers": [{"name": "main", "init": false, "priority": 1,
//                    "gpus": [{"uuid": "GPU-...", "index": 0, "milli": 300,
//                              "memory_mib": 4096, "cores": 30}]}]}
//
// - milli: the compute share reserved for the container on that GPU (1000 = the whole GPU).
// - memory_mib: the container's memory limit on that GPU.
// - cores: the SM limit the node enforces, percent 1..100 (100 = not throttled); it equals
//   milli / 10 when the pod asked for nvidia.com/gpucores and is 100 when it did not.
// - priority: nvidia.com/priority (0 high, 1 low), -1 when not given.
// - mig (optional): the MIG GPU instance the container runs in on that GPU,
//   {"profile": "1g.18gb", "start": 4} (+ "uuid": "MIG-..." when the instance already exists, on a
//   static "mig" GPU). On a "mig-dynamic" GPU the node creates exactly that (profile, start). The
//   GPU entry's uuid stays the parent GPU's; memory_mib and cores are the container's limits
//   inside the instance (a software slice within it when smaller than the instance).
// - App containers use distinct GPUs; an init container uses GPUs of the pod's set.
// - rank_order (optional, true only): the container's gpus are listed in the rank order the
//   extender chose for the pod's vgpu.io/comm-pattern, and are its CUDA device order.
//
// HAMi's hami.io/vgpu-devices-allocated ("uuid,NVIDIA,memMiB,cores:" per GPU, ';' between
// containers) with hami.io/vgpu-node is read for pods placed by HAMi before a migration, with
// the MIG instances of hami.io/vgpu-mig-allocations (hami_mig.h) as the entries' "mig".
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s/api/kube_client.h"

namespace vgpu::k8s {

inline constexpr const char* kAssignedNodeAnnotation = "vgpu.io/assigned-node";
inline constexpr const char* kAssignedGpusAnnotation = "vgpu.io/assigned-gpus";
inline constexpr const char* kAssignedAtAnnotation = "vgpu.io/assigned-at";
inline constexpr const char* kHamiAllocatedAnnotation = "hami.io/vgpu-devices-allocated";
inline constexpr const char* kHamiNodeAnnotation = "hami.io/vgpu-node";
inline constexpr int kAssignmentVersion = 1;

// The pod annotation that lets a pod share a fault domain (an MPS GPU) with other pods: "true".
inline constexpr const char* kAllowSharedFaultDomainAnnotation =
    "vgpu.io/allow-shared-fault-domain";

struct AssignedMig {
  std::string profile;  // "1g.18gb"
  int start = 0;        // first memory slice, 0..7
  std::string uuid;     // "MIG-..." when the instance exists already, else empty
  friend bool operator==(const AssignedMig&, const AssignedMig&) = default;
};

struct AssignedGpu {
  std::string uuid;
  int index = 0;
  int32_t milli = 0;
  int64_t memory_mib = 0;
  int cores = 100;
  std::optional<AssignedMig> mig = std::nullopt;
  friend bool operator==(const AssignedGpu&, const AssignedGpu&) = default;
};

struct ContainerAssignment {
  std::string name;
  bool init = false;
  int priority = -1;
  std::vector<AssignedGpu> gpus;
  // "rank_order": true (written only when true): `gpus` are in the rank order of the pod's
  // communication pattern and are the container's CUDA device order; otherwise the node numbers
  // them in its own (index) order, whatever the list's order.
  bool rank_order = false;
  friend bool operator==(const ContainerAssignment&, const ContainerAssignment&) = default;
};

enum class AssignmentSource { kVgpu, kHami };

struct PodAssignment {
  std::string node;
  int32_t reserved_milli = 0;       // per GPU
  int64_t reserved_memory_mib = 0;  // per GPU
  std::vector<ContainerAssignment> containers;
  AssignmentSource source = AssignmentSource::kVgpu;
  friend bool operator==(const PodAssignment&, const PodAssignment&) = default;
};

std::string FormatAssignment(const PodAssignment& a);
// Validates field types and ranges; errors name the field (kInvalidArgument).
Result<PodAssignment> ParseAssignment(std::string_view text);
// Parses HAMi's allocated-devices text; container names are "#0", "#1", ...
Result<PodAssignment> ParseHamiAllocation(std::string_view text, const std::string& node);

// The assignment a Pod object carries: ours, else HAMi's (with hami.io/vgpu-node or the pod's
// spec.nodeName), else std::nullopt.
Result<std::optional<PodAssignment>> AssignmentOfPod(const Json& pod);

// True when the pod carries vgpu.io/allow-shared-fault-domain: "true".
bool AllowsSharedFaultDomain(const Json& pod);

// RFC 3339 UTC with milliseconds, and back (accepts any fraction and a 'Z' or +00:00 offset).
std::string FormatTimestamp(std::chrono::system_clock::time_point t);
Result<std::chrono::system_clock::time_point> ParseTimestamp(std::string_view text);

}  // namespace vgpu::k8s
