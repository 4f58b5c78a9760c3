// The CPU and memory a pod requests and a node offers, as kube-scheduler's NodeResourcesFit
// counts them, so the placement engine works with the same host resources as kube-scheduler.
//
// Contract:
// - PodHostRequestOf: for CPU and memory each, the larger of
//     (sum over app containers) + (sum over restartable "sidecar" init containers), and
//     for every ordinary init container, its request + the sidecars started before it,
//   plus spec.overhead; pod-level spec.resources.requests, when given, replace the containers'
//   sum (Kubernetes' PodLevelResources). A container's request is resources.requests, else
//   resources.limits (the API server copies limits into missing requests). CPU is rounded up to
//   milli-cores, memory up to MiB. Errors name the container and the value.
// - NodeAllocatableOf: status.allocatable cpu (milli, rounded down) and memory (MiB, rounded
//   down); a missing or unreadable value is 0, as kube-scheduler reads it.
// Pure functions.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "k8s/api/kube_client.h"

namespace vgpu::k8s {

struct HostResources {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  bool IsZero() const { return cpu_milli == 0 && memory_mib == 0; }
  friend bool operator==(const HostResources&, const HostResources&) = default;
};

Result<HostResources> PodHostRequestOf(const Json& pod);
HostResources NodeAllocatableOf(const Json& node);

}  // namespace vgpu::k8s
