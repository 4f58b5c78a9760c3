// Process-wide state of libvgpu.so and its lazy initialisation.
//
// Nothing happens when the library is loaded: processes that never call CUDA or NVML (every
// shell command in a container with /etc/ld.so.preload) pay nothing. The first hook call reads
// the configuration, joins the slice region and opens the real driver library.
//
// Hot-path contract: EnsureCuda() is one acquire load once initialised; g_compute_limited is
// one relaxed load. The launch path makes no allocation, takes no lock and makes no system call
// when no compute limit is set.
#pragma once

#include <pthread.h>

#include <atomic>
#include <type_traits>

#include "intercept/config/config.h"
#include "intercept/driver_api.h"
#include "intercept/gate/copy_pacer.h"
#include "intercept/memory/accountant.h"
#include "intercept/memory/alloc_table.h"
#include "intercept/memory/pool_tracker.h"

namespace vgpu::intercept {

// Primary-context bookkeeping per device (the context overhead is charged once per primary
// context, while it is retained).
struct ContextState {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  int primary_refs[kMaxDevices] = {};
  uint64_t primary_charged[kMaxDevices] = {};
  CUcontext primary[kMaxDevices] = {};
};

struct Runtime {
  Config config;
  Accountant accountant;
  AllocTable table;
  PoolTracker pools;
  ContextState contexts;
  CopyPacer copy;
};

// No exit-time destructor: hooks may run on other threads while the process exits.
static_assert(std::is_trivially_destructible_v<Runtime>);

Runtime& GetRuntime();

extern DriverApi g_cuda;
extern NvmlApi g_nvml;
extern std::atomic<bool> g_compute_limited;
extern std::atomic<bool> g_copy_paced;  // a copy cap is set: copies go through the pacer
extern std::atomic<int> g_cuda_state;   // 0 not started, 1 running, 2 ready

bool InitCudaSlow();
// True when the CUDA side is initialised (initialising it on first use). False only when called
// re-entrantly from inside initialisation (the driver library's constructor calling back).
inline bool EnsureCuda() {
  return g_cuda_state.load(std::memory_order_acquire) == 2 || InitCudaSlow();
}
// The same for NVML.
bool EnsureNvml();
// Configuration and accounting only (no driver library).
bool EnsureBase();

// Looks `name` up with the real dlsym (found with dlvsym, never the override).
void* RealDlsym(void* handle, const char* name);
// Resolves the real dlsym into vgpu_real_dlsym (read by the dlsym trampoline).
void EnsureRealDlsym();

// After fork() in the child. Async-signal-safe.
void ResetRuntimeInChild();

// Test seam: use these tables and this configuration; `region` null gives a private region.
void InstallForTest(const DriverApi& cuda, const NvmlApi& nvml, const Config& config,
                    shm::Region* region, bool shared);

}  // namespace vgpu::intercept
