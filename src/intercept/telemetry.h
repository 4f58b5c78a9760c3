// The slice's exact counters as libvgpu.so keeps them (shm/region.h ProcCounters): kernel and
// graph launches, copy bytes by kind, allocations and frees, time held at the compute gate and
// at a quarantine pause, and the measured device time of gated launches.
//
// Each process counts into its own slot of the slice's region (claimed on the first count if it
// has none yet), so no two processes write the same cache line on the launch path; the region
// folds a slot's counters into the slice's totals when the slot is freed (exit, reclaim of a dead
// process, repair), so nothing counted is lost. Without a slot (the table is full, or after the
// process released it at exit) counts go to the slice's shared totals directly.
//
// Cost on the launch path: one relaxed pointer load and one relaxed atomic add on a cache line
// only this process writes (measured by bench_intercept --check). No lock, no allocation, no
// system call once the slot is claimed; safe in any thread. Counts are exact: a relaxed atomic
// add never loses an increment; readers may see one counter slightly ahead of another.
#pragma once

#include <atomic>
#include <cstdint>

#include "shm/region.h"

namespace vgpu::intercept {

// Where this process counts: its slot's counters, the slice's shared totals, or nullptr before
// the first count.
extern std::atomic<shm::ProcCounters*> g_counters;

// Claims the process's slot (once) and returns where to count. Never nullptr.
shm::ProcCounters* CountersSlow();

inline shm::ProcCounters* Counters() {
  shm::ProcCounters* c = g_counters.load(std::memory_order_relaxed);
  if (__builtin_expect(c != nullptr, 1)) return c;
  return CountersSlow();
}

inline void CountAdd(uint64_t& field, uint64_t value) {
  std::atomic_ref<uint64_t>(field).fetch_add(value, std::memory_order_relaxed);
}

// Kinds of copies (shm::kCopyKind*).
inline void CountCopy(int kind, uint64_t bytes) {
  if (kind >= 0 && kind < shm::kCopyKinds && bytes != 0) {
    CountAdd(Counters()->copy_bytes[kind], bytes);
  }
}

// After a gated kernel launch the driver accepted (gate.cc): raises the time of the process's
// last launch, its slot's last_kernel_ns (the slice's telemetry.last_kernel_ns without a slot),
// to `now_ns` (CLOCK_MONOTONIC). One relaxed load and, when later, one compare-exchange; on the
// gated path only, which holds the arbiter's lock and reads the clock anyway.
void NoteGatedLaunch(uint64_t now_ns);

// The accountant tells where the process's slot is: `slot` >= 0 in `region`, or -1 (count into
// the slice's shared totals). Marks the region as counted (kTelemetryCounting).
void PublishCounters(shm::Region* region, int slot);
// In the child after fork() and in tests: forget the slot. Async-signal-safe.
void ResetCounters();

}  // namespace vgpu::intercept
