// Live resize of a slice: overrides of the region's immutable memory and compute limits, kept in
// the region's ResizeControl (region.h, minor 4), so that a running slice's limits change without
// restarting its processes.
//
//   Writer: ResizeRegion(), under the region mutex. A memory limit may shrink only down to what
//   the slice has in use: the check and the write happen under the same lock as every charge
//   (region_ops.h), so no concurrent charge can slip past a shrink. The fields are written as a
//   seqlock (seq odd while writing, then the checksum, then seq even).
//   Readers: lock-free (ReadResize, MemoryLimitInForce, SmLimitInForce) or under the mutex
//   (the charge path). A torn or corrupted override (checksum mismatch after a few retries)
//   reads as "no override": the config's limits hold.
//
// Cost: ResizeSeq() is one relaxed 64-bit load, for fast paths that only need to know whether
// anything changed since they last looked. No allocation, no exceptions (libvgpu.so links it).
#pragma once

#include <cstdint>

#include "shm/proc_identity.h"
#include "shm/region.h"

namespace vgpu::shm {

// What to change; zero fields are left as they are.
struct ResizeRequest {
  uint64_t memory_limit[kMaxDevices] = {};  // bytes; kNoLimit = unlimited; 0 = unchanged
  uint32_t sm_limit[kMaxDevices] = {};  // 1..100 percent (100 = no compute limit); 0 = unchanged
  int32_t priority = -1;                // PriorityLevel 0..4 (shm/arbiter.h); -1 = unchanged
};

// Why a resize was refused (kOverLimit): the first device whose usage exceeds the asked limit.
struct ResizeRefusal {
  int device = -1;
  uint64_t used = 0;
  uint64_t asked = 0;
};

// Applies `request` to the region: kOk, kOverLimit (a memory limit below what the slice has in
// use on that device; nothing is changed, `*refusal` says where), kCorrupt (a value out of range:
// sm_limit above 100, a priority outside 0..4, a device index at or above the configured device
// count), or a lock error.
RegionError ResizeRegion(Region* region, const ResizeRequest& request, const ProcIdentity& self,
                         ResizeRefusal* refusal);

// The override's sequence number (relaxed; 0 = never resized). Changes with every resize.
inline uint64_t ResizeSeq(const Region* region) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(region->header.resize.seq))
      .load(std::memory_order_relaxed);
}

// A consistent snapshot of the override into `*out`. False when there is none (seq 0) or it
// cannot be read consistently (corrupted): then `*out` is all zero (no override).
bool ReadResize(const Region* region, ResizeControl* out);

// The memory limit in force on `device`: the override when there is one, else the config's.
uint64_t MemoryLimitInForce(const Region* region, int device);
// Whether the override replaces the memory limit of `device`.
bool HasMemoryOverride(const Region* region, int device);
// The compute limit in force on `device`, percent; 0 = none (the config's convention).
uint32_t SmLimitInForce(const Region* region, int device);
// The slice's priority level in force (the override, else the config's).
int32_t PriorityInForce(const Region* region);

// FNV-1a 64 of the override (seq, memory_limit[], sm_limit[], priority).
uint64_t ResizeChecksum(const ResizeControl& control);

// REQUIRES the region mutex, after a holder died: an override left half-written (odd seq) is
// dropped (the config holds again) and the seqlock made even.
void RepairResizeLocked(Region* region);

}  // namespace vgpu::shm
