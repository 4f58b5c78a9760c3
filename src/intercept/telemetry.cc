#include "intercept/telemetry.h"

#include "intercept/runtime.h"

namespace vgpu::intercept {

std::atomic<shm::ProcCounters*> g_counters{nullptr};

namespace {

// Where counts go when there is no region at all (never read).
shm::ProcCounters g_unused_counters;

}  // namespace

shm::ProcCounters* CountersSlow() {
  EnsureBase();
  Accountant& a = GetRuntime().accountant;
  // Claiming the slot publishes it (Accountant::EnsureSlot); a failed claim publishes the
  // slice's totals, so that this slow path runs once.
  if (!a.EnsureSlotForCounters()) PublishCounters(a.region(), -1);
  shm::ProcCounters* c = g_counters.load(std::memory_order_relaxed);
  return c != nullptr ? c : &g_unused_counters;
}

void PublishCounters(shm::Region* region, int slot) {
  if (region == nullptr) {
    g_counters.store(&g_unused_counters, std::memory_order_relaxed);
    return;
  }
  std::atomic_ref<uint32_t>(region->header.telemetry.flags)
      .fetch_or(shm::kTelemetryCounting, std::memory_order_relaxed);
  g_counters.store(slot >= 0 && slot < shm::kMaxProcs ? &region->slots[slot].counters
                                                      : &region->header.telemetry.folded,
                   std::memory_order_release);
}

void ResetCounters() { g_counters.store(nullptr, std::memory_order_relaxed); }

}  // namespace vgpu::intercept
