#include "intercept/tenant_control.h"

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

void HoldWhilePausedSlow(shm::TenantControl* control) {
  bool counted = false;
  for (;;) {
    const uint64_t until =
        std::atomic_ref<uint64_t>(control->pause_until_ns).load(std::memory_order_acquire);
    const uint64_t now = MonotonicNs();
    if (until <= now) return;
    if (!counted) {
      CountIn(control->held_launches);
      counted = true;
    }
    uint64_t wait = until - now;
    if (wait > 20'000'000ULL) wait = 20'000'000ULL;
    if (wait < 1'000'000ULL) wait = 1'000'000ULL;
    timespec ts{0, static_cast<long>(wait)};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace vgpu::intercept
