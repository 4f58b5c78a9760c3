#include "intercept/gate/tenant_control.h"

#include <time.h>

namespace vgpu::intercept {

std::atomic<shm::TenantControl*> g_tenant_control{nullptr};

namespace {

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

void CountLaunchFailure() {
  if (shm::TenantControl* c = g_tenant_control.load(std::memory_order_relaxed)) {
    CountIn(c->launch_failures);
  }
}

void HoldWhilePausedSlow(shm::TenantControl* control) {
  bool counted = false;
  uint64_t first = 0;
  for (;;) {
    const uint64_t until =
        std::atomic_ref<uint64_t>(control->pause_until_ns).load(std::memory_order_acquire);
    const uint64_t now = MonotonicNs();
    if (until <= now) {
      if (counted) CountAdd(Counters()->pause_wait_ns, now - first);
      return;
    }
    if (!counted) {
      CountIn(control->held_launches);
      counted = true;
      first = now;
    }
    uint64_t wait = until - now;
    if (wait > 20'000'000ULL) wait = 20'000'000ULL;
    if (wait < 1'000'000ULL) wait = 1'000'000ULL;
    timespec ts{0, static_cast<long>(wait)};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace vgpu::intercept
