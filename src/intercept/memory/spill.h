// The spill path of libvgpu.so (memory mode `spill`, docs/oversubscription.md).
//
// A slice in spill mode whose priority is below high (normal, low, idle) has an allocation that
// fits its limit but that the GPU cannot hold physically (the driver's cuMemAlloc fails with
// CUDA_ERROR_OUT_OF_MEMORY) served from managed memory instead: cuMemAllocManaged(GLOBAL), then
// cuMemAdvise(SET_PREFERRED_LOCATION, CPU) so its pages live on the host first and are the
// first to leave the GPU, and cuMemAdvise(SET_ACCESSED_BY, device) so the device maps them
// rather than faulting them back and forth. The charge against the slice's limit is the same as
// for device memory.
//
// A slice of priority high or realtime (a "protected" slice) never spills: its memory is device
// memory and is never evicted; an allocation the GPU cannot hold is the driver's real
// out-of-memory error, counted in the region (gpu_refusals). Strict and overcommit slices never
// spill either.
//
// What is spilled is recorded in the slice region's SpillState (shm/region.h, lock-free atomics):
// bytes now spilled (total and per device), the peak, allocations spilled, refusals.
//
// Thread safety: every function may be called from any thread. No allocation, no exceptions.
#pragma once

#include <cstdint>

#include "intercept/config/config.h"
#include "intercept/driver_api.h"

namespace vgpu::intercept {

// True for priority levels whose memory must stay on the GPU (realtime, high).
inline bool ProtectedPriority(int32_t priority) { return priority <= shm::kPriorityHigh; }

// True when `config` makes this process's slice spill (mode spill, priority below high).
inline bool SliceSpills(const Config& config) {
  return config.memory_mode == kMemorySpill && !ProtectedPriority(config.priority);
}

// Writes the slice's mode and protection into `region` (once per process; idempotent).
void PublishSpillMode(shm::Region* region, const Config& config);

// Allocates `bytes` of managed memory preferring the host for `device`, with the advice above.
// The caller has charged the slice already. Returns the driver's result.
CUresult SpillAllocate(CUdeviceptr* dptr, size_t bytes, int device);

// Counts `bytes` as spilled on `device` in `region` (or no longer spilled).
void NoteSpilled(shm::Region* region, int device, uint64_t bytes);
void NoteUnspilled(shm::Region* region, int device, uint64_t bytes);
// Counts an allocation within the limit that the GPU could not hold and the slice did not spill.
void NoteGpuRefusal(shm::Region* region);

}  // namespace vgpu::intercept
