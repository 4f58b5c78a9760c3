// The node daemon's quarantine of this process's slice, as libvgpu.so applies it
// (shm/region.h TenantControl, node/faults/tenant_levels.h):
//   - HoldIfPaused(): every kernel-launch hook calls it first; while the daemon's pause lease
//     (pause_until_ns, CLOCK_MONOTONIC) runs, the launch waits (sleeping, 1..20 ms steps) and is
//     counted in held_launches. A lease that the daemon stops renewing ends by itself.
//   - CountLaunchResult(): a launch the driver accepted is counted in the process's launches
//     (telemetry.h; CountGraphLaunchResult: graph_launches), one it refused in launch_failures;
//     CountOomRefusal(): an allocation refused over the limit is counted in oom_refusals. The
//     daemon turns these counters into signals.
// The daemon, never this library, ends a tenant's processes.
// Cost without a pause: one relaxed pointer load and one relaxed 64-bit load per launch. No
// locks, no allocation, no exceptions; safe in any thread.
#pragma once

#include <atomic>

#include "intercept/driver_api.h"
#include "intercept/telemetry.h"
#include "shm/region.h"

namespace vgpu::intercept {

// Set once the slice's shared region is mapped (null: no shared region, nothing to apply).
extern std::atomic<shm::TenantControl*> g_tenant_control;

void HoldWhilePausedSlow(shm::TenantControl* control);

inline void HoldIfPaused() {
  shm::TenantControl* c = g_tenant_control.load(std::memory_order_relaxed);
  if (c != nullptr &&
      __builtin_expect(
          std::atomic_ref<uint64_t>(c->pause_until_ns).load(std::memory_order_relaxed) != 0, 0)) {
    HoldWhilePausedSlow(c);
  }
}

inline void CountIn(uint64_t& counter) {
  std::atomic_ref<uint64_t>(counter).fetch_add(1, std::memory_order_relaxed);
}

void CountLaunchFailure();

inline CUresult CountLaunchResult(CUresult rc) {
  if (__builtin_expect(rc != CUDA_SUCCESS, 0)) {
    CountLaunchFailure();
  } else {
    CountAdd(Counters()->launches, 1);
  }
  return rc;
}

inline CUresult CountGraphLaunchResult(CUresult rc) {
  if (__builtin_expect(rc != CUDA_SUCCESS, 0)) {
    CountLaunchFailure();
  } else {
    CountAdd(Counters()->graph_launches, 1);
  }
  return rc;
}

inline void CountOomRefusal() {
  if (shm::TenantControl* c = g_tenant_control.load(std::memory_order_relaxed)) {
    CountIn(c->oom_refusals);
  }
}

}  // namespace vgpu::intercept
