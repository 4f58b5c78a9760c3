// HAMi's dynamic-MIG reservations, read so that pods placed by HAMi keep their MIG instances
// counted after a migration to vgpu:
//
//   hami.io/vgpu-mig-allocations = [{"gpuUUID": "GPU-...", "profile": "1g.18gb",
//                                    "placement": {"start": 0, "size": 1}, "migUUID": "MIG-...",
//                                    "gpuInstanceID": 1, "computeInstanceID": 0}, ...]
//
// (field names as HAMi's scheduler writes them, pkg/device/nvidia). Unknown fields are ignored;
// errors name the entry and field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s/wire/pod_assignment.h"

namespace vgpu::k8s {

inline constexpr const char* kHamiMigAllocationsAnnotation = "hami.io/vgpu-mig-allocations";

struct HamiMigAllocation {
  std::string gpu_uuid;
  AssignedMig mig;
  friend bool operator==(const HamiMigAllocation&, const HamiMigAllocation&) = default;
};

Result<std::vector<HamiMigAllocation>> ParseHamiMigAllocations(std::string_view text);

// Records each allocation on the assignment's entries of its GPU: the k-th allocation of a GPU
// goes to the k-th entry of that GPU (containers in order) that has no MIG instance yet.
// Allocations of GPUs the assignment does not name are left out.
void ApplyHamiMigAllocations(const std::vector<HamiMigAllocation>& allocations, PodAssignment* a);

}  // namespace vgpu::k8s
