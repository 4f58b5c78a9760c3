// Helpers shared by the hook implementations (hook_*.cc). Internal to libvgpu.
#pragma once

#include "intercept/hooks/hooks.h"
#include "intercept/runtime.h"

namespace vgpu::intercept {

// The calling thread's current context and its device.
struct DeviceContext {
  CUcontext context = nullptr;
  int device = -1;
};

// False when there is no current context (the hook then lets the driver report the error).
bool CurrentDeviceContext(DeviceContext* out);

// Gives back what `entry` charged (through its pool when it came from one).
void ReleaseEntry(const AllocEntry& entry);

// Forgets and gives back every allocation made in `context` (it was destroyed or reset).
void ReleaseContextAllocations(CUcontext context);

// Charges `bytes` for a new allocation on `device`, logging the refusal at info level.
bool ChargeOrRefuse(int device, uint64_t bytes, const char* what);

// Records a successful allocation; if the table cannot hold it the charge is kept for good.
void Track(uint64_t key, Space space, int device, CUcontext context, uint64_t bytes, int pool = -1,
           uint16_t flags = 0);

inline uint64_t ContextKey(CUcontext c) { return reinterpret_cast<uint64_t>(c); }

}  // namespace vgpu::intercept
