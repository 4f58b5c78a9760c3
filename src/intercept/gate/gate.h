// The compute gate of libvgpu.so: every launch path (kernels, cooperative kernels,
// cuLaunchKernelEx, graphs, the per-thread-stream and legacy variants) of a process whose slice has
// compute settings passes through GatedLaunch(), which holds the launch until the GPU's arbiter
// (shm/arbiter_policy.h) admits it, lets it reach the driver, and tracks it until it completes.
//
// In-flight accounting. Launches are asynchronous: what a slice has queued on the GPU matters,
// not how fast it calls cuLaunchKernel. The arbiter admits a launch against its model of the GPU's
// queue (estimated durations of all admitted work) and runs it under its lock, so that launches
// reach the GPU in admission order. After each admitted launch the gate records an event (a
// timing event of its own, from a per-context pool) on the launch's stream. At every later gated
// launch (and while waiting) it polls the oldest events; a completed one gives the launch's end
// on the host clock, through a reference event recorded on a private idle stream whose host time
// is known (re-taken every 5 s). The gate reports these ends to the arbiter (shm::ReportEnds),
// which measures each launch's device time as end - max(launch, end of the launch admitted just
// before it, from whichever process), corrects the slice's charge, and hands the device time back
// (shm::LaunchDuration) for the site's estimate (kernel_estimates.h). A site never measured
// (nor its function at another grid size) has no estimate: at most one such launch per context
// is in flight at a time. On the simulated GPU (FIFO, exact event times) all of this is exact; on
// a real GPU the errors are in docs/compute.md.
//
// Not gated: launches into a stream that is being captured (the captured graph is gated when it
// is launched), launches without a current context (the driver reports the error), and launches
// when the arbiter cannot be locked within 5 s (a stopped peer): those pass with a warning.
//
// Thread safety: one process-wide mutex guards the gate's state; it is released while a launch
// waits for its turn. The gate's own driver calls run in the relaxed stream-capture mode so that
// they never disturb another thread's global-mode capture. No exceptions; no heap allocation.
#pragma once

#include <cstdint>

#include "intercept/driver_api.h"

namespace vgpu::intercept {

// What the gate needs to know about a launch.
struct LaunchSite {
  uint64_t key = 0;     // estimate key (KernelEstimates::KernelKey / GraphKey)
  uint64_t family = 0;  // the function's key (KernelEstimates::FamilyKey); = key for graphs
  CUstream stream = nullptr;
  bool per_thread = false;  // the _ptsz variant: stream 0 is the per-thread default stream
};

// The real launch, as a callback: `args` is the caller's argument block.
using RealLaunch = CUresult (*)(void* args);

// Waits for the slice's turn, runs `launch(args)`, and tracks the launch to completion.
CUresult GatedLaunch(const LaunchSite& site, RealLaunch launch, void* args);

// After cuCtxSynchronize: every launch of the current context has ended; measure them now
// (telemetry.h busy time), rather than at the next launch. Up to kRingSize launches.
void GateAfterSynchronize();

// The context is being destroyed or reset: forget its events and streams.
void GateForgetContext(CUcontext context);

// At process exit: hand back the turn and leave the arbiters. Idempotent.
void GateAtExit();

// In the child after fork(): nothing is joined, no context is known. Async-signal-safe.
void GateResetInChild();

// Counters for tests and diagnostics.
struct GateStats {
  uint64_t admitted = 0;     // launches admitted by an arbiter
  uint64_t held = 0;         // launches that had to wait for their turn
  uint64_t passed = 0;       // launches that passed ungated (capture, no context, no arbiter)
  uint64_t completed = 0;    // tracked launches seen completing
  uint64_t measured = 0;     // of which measured cleanly (see above)
  uint64_t measured_ns = 0;  // their measured device time
};
GateStats GetGateStats();

}  // namespace vgpu::intercept
