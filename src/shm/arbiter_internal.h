// Helpers shared by arbiter_members.cc and arbiter_policy.cc. Internal to src/shm.
// Every function REQUIRES the arbiter lock (checked: common/thread_annotations.h).
#pragma once

#include "common/thread_annotations.h"
#include "shm/arbiter.h"
#include "shm/proc_identity.h"

namespace vgpu::shm::internal {

// Frees slice records without members; drops the turn of a freed owner. True if gates should
// be woken (the generation was bumped).
bool ReleaseEmptySlicesLocked(Arbiter* arbiter) VGPU_REQUIRES(arbiter->header.mutex);

// Moves the generation forward (gates sleeping on the old value wake up when woken).
void BumpGenerationLocked(Arbiter* arbiter) VGPU_REQUIRES(arbiter->header.mutex);

// After the previous holder died with the lock: recount members and waiters from the process
// records, free dead processes and empty slices, and check the owner.
void RepairLocked(Arbiter* arbiter, const ProcIdentity& self) VGPU_REQUIRES(arbiter->header.mutex);

}  // namespace vgpu::shm::internal
