// The simulated device timeline: kernels from every process run one at a time, as on a GPU
// without MPS, in launch order.
//
// A kernel launched at `now` whose stream allows it to start at `ready` starts at
//   start = max(now, ready, device busy-until)      and ends at   end = start + duration.
// Its wait (start - now) and its duration are added to the launching process's totals. The
// interval is queued as pending; Settle() moves the part of each pending kernel that lies before
// `now` into 10 ms utilization buckets (per device and per process), so utilization over a
// window is exact up to bucket resolution at the window's start. At most kPendingCapacity kernels
// may be queued per device (a real GPU's launch queue is finite too): EnqueueKernel reports a full
// queue and the time at which the oldest queued kernel ends, and the caller waits and retries.
//
// Copies between host and device go through the host link's copy engines: one FIFO queue per
// direction, shared by every process (EnqueueCopy). A copy of n bytes in direction d starts at
//   start = max(now, ready, busy-until of direction d)
// and moves at bandwidth[d]; while the other direction is busy (up to its busy-until) it moves
// at bandwidth[d] x coupling_pct / 100, since the two directions share the link, the host's
// memory and the PCIe root (measured on A100 SXM: 25 GB/s H2D alone, ~11 GB/s with D2H at once).
// A bandwidth of 0 makes copies in that direction instant.
//
// Stuck kernels (injected faults): ArmStuckKernel makes the next kernel of a process (or of any
// process) on a device never end: it ends at StuckEnd(k) of a new episode k, a time beyond any
// clock reading, and work queued behind it on the device (or waiting for it in a stream) gets
// times beyond that. ClearStuckKernel(device, C) ends it at C: every time t of the episode
// becomes C + (t - StuckEnd(k)), at once in the shared state and, through ResolveTime, wherever
// a process keeps such a time (streams, events). Times of an episode not yet cleared stay beyond
// every real time, so ordering by max() keeps working; a waiter polls until they resolve.
//
// All functions operate on a mapped SharedStateLayout and require its lock to be held; they never
// read the clock themselves (callers pass `now`), so tests drive them with synthetic times.
#pragma once

#include <cstdint>

#include "simgpu/shared_state.h"

namespace vgpu::simgpu {

struct KernelTiming {
  bool queued = false;  // false: the device queue is full; retry at `retry_at_ns`
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t retry_at_ns = 0;
};

// Queues a kernel of `duration_ns` on device `device` for process `slot`.
KernelTiming EnqueueKernel(SharedStateLayout* state, int device, int slot, uint64_t now_ns,
                           uint64_t ready_ns, uint64_t duration_ns);

enum class CopyDir : int { kHostToDevice = 0, kDeviceToHost = 1 };

struct CopyLink {
  uint64_t bytes_per_s[2] = {0, 0};  // by CopyDir; 0: instant
  uint32_t coupling_pct = 100;       // bandwidth kept while the other direction is busy (1..100)
};

struct CopyTiming {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// The time a copy takes at `link` when it starts at `start_ns` and the other direction is busy
// until `other_busy_until_ns` (pure; exposed for tests).
uint64_t CopyDuration(const CopyLink& link, CopyDir dir, uint64_t bytes, uint64_t start_ns,
                      uint64_t other_busy_until_ns);

// Queues a copy of `bytes` in direction `dir` on device `device`'s link.
CopyTiming EnqueueCopy(SharedStateLayout* state, int device, uint64_t now_ns, uint64_t ready_ns,
                       uint64_t bytes, CopyDir dir, const CopyLink& link);

inline constexpr uint64_t kStuckBase = 1ULL << 62;
inline constexpr int kStuckEpisodeShift = 46;  // ~19.5 h of work may queue behind a stuck kernel
inline constexpr uint64_t StuckEnd(uint64_t episode) {
  return kStuckBase + (episode << kStuckEpisodeShift);
}
// `t` with cleared episodes resolved; a time of an episode still stuck is returned unchanged
// (>= kStuckBase). Reads the state without its lock (a racy read resolves on the next call).
uint64_t ResolveTime(const SharedStateLayout* state, uint64_t t);
// The next kernel that `pid` (-1: any process) queues on `device` sticks. False when a kernel is
// stuck there already.
bool ArmStuckKernel(SharedStateLayout* state, int device, int32_t pid);
// Ends the stuck kernel of `device` (and disarms it) at `now_ns`. False when none was stuck or
// armed.
bool ClearStuckKernel(SharedStateLayout* state, int device, uint64_t now_ns);

// The kernel running on `device` at `now_ns`, if any: its process slot and start.
struct RunningKernel {
  bool running = false;
  int slot = -1;
  int32_t pid = 0;
  uint64_t start_ns = 0;
  bool stuck = false;  // an injected stuck kernel
};
RunningKernel FindRunningKernel(const SharedStateLayout* state, int device, uint64_t now_ns);

// Counts the busy time of pending kernels up to `now_ns` into the buckets.
void Settle(SharedStateLayout* state, int device, uint64_t now_ns);

// Busy time of the device (slot < 0) or of one process slot within [from_ns, to_ns), from the
// settled buckets. Accurate for windows within the last kUtilBuckets * kUtilBucketNs (5.12 s).
uint64_t BusyInWindow(const SharedStateLayout* state, int device, int slot, uint64_t from_ns,
                      uint64_t to_ns);

// Settles and returns busy percent (0..100) of the device or a slot over [now - window, now).
unsigned UtilizationPercent(SharedStateLayout* state, int device, int slot, uint64_t now_ns,
                            uint64_t window_ns);

// Per-process timeline totals on one device, since the process registered.
struct ProcessTimelineStats {
  uint64_t busy_ns = 0;  // kernel time queued
  uint64_t wait_ns = 0;  // sum of launch-to-start waits
  uint64_t kernels = 0;
};
ProcessTimelineStats GetProcessTimelineStats(const SharedStateLayout* state, int device, int slot);

// Adds [from_ns, to_ns) of busy time to a bucket ring (exposed for tests).
void AddBusy(UtilBucket* ring, uint64_t from_ns, uint64_t to_ns);

}  // namespace vgpu::simgpu
