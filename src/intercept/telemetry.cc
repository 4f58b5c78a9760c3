#include "intercept/telemetry.h"

#include "intercept/runtime.h"

namespace vgpu::intercept {

std::atomic<shm::ProcCounters*> g_counters{nullptr};

namespace {

// Where counts go when there is no region at all (never read).
shm::ProcCounters g_unused_counters;
uint64_t g_unused_last_kernel = 0;

// Where the time of the last gated launch goes, published with g_counters.
std::atomic<uint64_t*> g_last_kernel{nullptr};

}  // namespace

void NoteGatedLaunch(uint64_t now_ns) {
  Counters();  // publishes the slot (or the shared totals) on first use
  uint64_t* field = g_last_kernel.load(std::memory_order_relaxed);
  if (field == nullptr) return;
  std::atomic_ref<uint64_t> last(*field);
  uint64_t seen = last.load(std::memory_order_relaxed);
  while (seen < now_ns && !last.compare_exchange_weak(seen, now_ns, std::memory_order_relaxed)) {
  }
}

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
    g_last_kernel.store(&g_unused_last_kernel, std::memory_order_relaxed);
    g_counters.store(&g_unused_counters, std::memory_order_relaxed);
    return;
  }
  std::atomic_ref<uint32_t>(region->header.telemetry.flags)
      .fetch_or(shm::kTelemetryCounting, std::memory_order_relaxed);
  const bool has_slot = slot >= 0 && slot < shm::kMaxProcs;
  g_last_kernel.store(
      has_slot ? &region->slots[slot].last_kernel_ns : &region->header.telemetry.last_kernel_ns,
      std::memory_order_relaxed);
  g_counters.store(has_slot ? &region->slots[slot].counters : &region->header.telemetry.folded,
                   std::memory_order_release);
}

void ResetCounters() {
  g_last_kernel.store(nullptr, std::memory_order_relaxed);
  g_counters.store(nullptr, std::memory_order_relaxed);
}

}  // namespace vgpu::intercept
