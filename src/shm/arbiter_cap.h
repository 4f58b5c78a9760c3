// Lowering (and restoring) one slice's compute share in a GPU's arbiter, for the node daemon's
// quarantine level "limit" (node/faults/tenant_levels.h). The slice's record keeps its config
// while it has members (a joining process does not overwrite it), so a cap holds until it is
// restored or the slice leaves. Takes the arbiter lock; no allocation.
#pragma once

#include <cstdint>

#include "shm/arbiter.h"
#include "shm/proc_identity.h"

namespace vgpu::shm {

// Sets slice `key`'s max share to `max_pct` (1..100; in capped mode its guarantee too) and
// stores the max it had in `*previous`. kNotReady when the arbiter has no slice `key`.
RegionError CapArbiterSlice(Arbiter* arbiter, uint64_t key, uint32_t max_pct,
                            const ProcIdentity& self, uint32_t* previous);

// Sets slice `key`'s priority level (PriorityLevel 0..4) and stores the one it had in
// `*previous` (live resize, region_resize.h). kNotReady when the arbiter has no slice `key`.
RegionError SetArbiterSliceLevel(Arbiter* arbiter, uint64_t key, int32_t level,
                                 const ProcIdentity& self, int32_t* previous);

}  // namespace vgpu::shm
