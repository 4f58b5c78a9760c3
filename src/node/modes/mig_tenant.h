// Attribution of a fault on a MIG instance to its tenant. NVML's XID events carry the GPU and
// compute instance ids (nvmlEventData_t gpuInstanceId / computeInstanceId) but, on most faults,
// no process; an instance that only one tenant uses names that tenant as surely as a pid would.
// Pure logic: the daemon passes what it knows (its slices, the MIG manager's claims).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "device/device_backend.h"
#include "node/modes/mig_manager.h"
#include "node/slice.h"

namespace vgpu::node {

// The "MIG-..." UUID of the instance (gi, ci) of GPU `instances` lists, or "" when none matches
// (ci kNoInstance matches the GPU instance's only compute instance).
std::string MigInstanceUuid(const std::vector<device::MigInstance>& instances, uint32_t gi,
                            uint32_t ci);

// The slice whose devices include MIG instance `mig_uuid` when it is the only one, and, when the
// MIG manager claimed the instance (`claims` not null and one of them names it), that claim
// names one pod. nullopt otherwise, with the reason in *why ("no tenant", "2 tenants").
std::optional<std::string> OnlyTenantOfMigInstance(const std::vector<SliceRecord>& slices,
                                                   const std::vector<MigClaim>* claims,
                                                   const std::string& mig_uuid, std::string* why);

}  // namespace vgpu::node
