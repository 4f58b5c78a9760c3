// Live resize of the slice's compute share (gate_internal.h ApplyResizeLocked): the gate looks at
// the region's resize sequence number before each admission and, when it moved, sets the slice's
// max share (and priority level, when overridden) in the GPU's arbiter to the limits in force
// (shm/region_resize.h). Every process of the slice does the same on its next launch; the arbiter's
// record is per slice, so the first one changes the share for all of them, and the arbiter's
// generation bump wakes its waiters.
#include <atomic>

#include "common/log.h"
#include "intercept/gate/gate_internal.h"
#include "intercept/runtime.h"
#include "shm/arbiter_cap.h"
#include "shm/region_resize.h"

namespace vgpu::intercept::gate {

void ApplyResizeLocked(DeviceGate* dg, int device) {
  Accountant& acct = GetRuntime().accountant;
  shm::Region* region = acct.region();
  if (!dg->own_slice || region == nullptr || !acct.shared()) return;
  const uint64_t seq = shm::ResizeSeq(region);
  if (__builtin_expect(seq == dg->resize_seq, 1)) return;
  shm::ResizeControl c;
  if (!shm::ReadResize(region, &c)) {
    if (seq & 1) return;   // being written: look again at the next launch
    dg->resize_seq = seq;  // corrupted: the config's share stays
    return;
  }
  dg->resize_seq = seq;
  if (c.priority != 0) {
    int32_t level = static_cast<int32_t>(c.priority) - 1, was = 0;
    shm::RegionError e =
        shm::SetArbiterSliceLevel(dg->arbiter, dg->key, level, acct.identity(), &was);
    if (e != shm::RegionError::kOk) {
      VGPU_LOG_WARN("live resize of device %d to priority %d: %s", device, level,
                    shm::RegionErrorText(e));
    }
  }
  if (c.sm_limit[device] == 0) return;  // the share is not overridden
  uint32_t pct = c.sm_limit[device];
  // The node daemon's quarantine cap still bounds a resized slice.
  uint32_t cap = std::atomic_ref<uint32_t>(region->header.control.share_cap_pct)
                     .load(std::memory_order_relaxed);
  if (cap != 0 && cap < pct) pct = cap;
  uint32_t previous = 0;
  shm::RegionError e = shm::CapArbiterSlice(dg->arbiter, dg->key, pct, acct.identity(), &previous);
  if (e != shm::RegionError::kOk) {
    VGPU_LOG_WARN("live resize of device %d to %u%%: %s", device, pct, shm::RegionErrorText(e));
  } else if (previous != pct) {
    VGPU_LOG_INFO("device %d: compute share resized from %u%% to %u%%", device, previous, pct);
  }
}

}  // namespace vgpu::intercept::gate
