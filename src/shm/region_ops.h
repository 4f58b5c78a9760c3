// Operations on a mapped region: the robust lock, process slots, charges and the dead-process
// sweep. See region.h for the layout and the crash-safety argument.
//
// Thread safety: every function may be called from any thread of any process that maps the
// region. Functions that write take the region mutex; readers (DeviceUsed, ...) do not.
// No allocation, no exceptions. System calls only when the lock is contended (futex), when a
// charge does not fit (sweep), and in slot claim/release.
#pragma once

#include <cstdint>

#include "shm/proc_identity.h"
#include "shm/region.h"

namespace vgpu::shm {

// Holds the region mutex for its lifetime. On EOWNERDEAD (the previous holder died) the region
// is repaired before the constructor returns: dead slots are freed, device_used[] recomputed.
class RegionLock {
 public:
  RegionLock(Region* region, const ProcIdentity& self, int timeout_ms);
  ~RegionLock();
  RegionLock(const RegionLock&) = delete;
  RegionLock& operator=(const RegionLock&) = delete;

  bool held() const { return status_ == RegionError::kOk; }
  RegionError status() const { return status_; }
  // True when this acquisition found the previous holder dead and repaired the region.
  bool repaired() const { return repaired_; }

 private:
  Region* region_;
  RegionError status_ = RegionError::kLockBroken;
  bool repaired_ = false;
};

// Default lock timeout: a live holder never keeps the lock longer than a few microseconds, so
// this only expires when a holder is stopped (SIGSTOP) or the region is broken.
inline constexpr int kDefaultLockTimeoutMs = 5000;

// Claims a free slot for `self`. A slot already holding `self` (same pid and start time: this
// process before an exec) is reset and reused. Sweeps dead slots when the table is full.
RegionError ClaimSlot(Region* region, const ProcIdentity& self, int* slot_index);

// Frees `slot_index` if it still belongs to `self`, giving its charges back.
void ReleaseSlot(Region* region, int slot_index, const ProcIdentity& self);

// Charges `bytes` on `device` to slot `slot_index` if the device's total stays within
// min(slice limit in force (config or live override), process_limit). When it does not fit, dead
// processes are swept and the charge is retried once. kOk, kOverLimit, or a lock error.
RegionError Charge(Region* region, int slot_index, int device, uint64_t bytes,
                   uint64_t process_limit, const ProcIdentity& self);

// Charges as much of `bytes` as fits (0..bytes) and returns the amount charged.
uint64_t ChargeUpTo(Region* region, int slot_index, int device, uint64_t bytes,
                    uint64_t process_limit, const ProcIdentity& self);

// Gives back `bytes` on `device` from slot `slot_index`. Saturates at zero: never underflows,
// and never takes more from the device total than the slot holds.
void Uncharge(Region* region, int slot_index, int device, uint64_t bytes, const ProcIdentity& self);

// Frees the slots of dead processes (same pid namespace only). Returns how many were freed.
int SweepDeadSlots(Region* region, const ProcIdentity& self);

// Sweeps if the last sweep of this region is older than kSweepIntervalNs. Cheap otherwise.
int MaybeSweep(Region* region, const ProcIdentity& self);

// Lock-free readers. ConfigLimit: the slice's memory limit in force on `device` (the live
// override of region_resize.h when the slice was resized, else the config's).
uint64_t DeviceUsed(const Region* region, int device);
uint64_t ConfigLimit(const Region* region, int device);
uint64_t SlotUsed(const Region* region, int slot_index, int device);

// The slice's counters (region.h ProcCounters): the folded totals plus every live slot's, read
// without the lock under the telemetry seqlock. False when a fold kept moving for 64 tries (the
// caller reports the slice as unreadable this time). Reads SlotsToScan() slots.
struct SliceCounters {
  ProcCounters totals{};
  uint64_t peak_used[kMaxDevices] = {};
  int processes = 0;      // live slots
  bool counting = false;  // a counting libvgpu.so has joined (kTelemetryCounting)
  // CLOCK_MONOTONIC time of the slice's last gated kernel launch, by any of its processes,
  // living or gone (minor 5); 0 = none recorded.
  uint64_t last_kernel_ns = 0;
};
bool ReadSliceCounters(const Region* region, SliceCounters* out);
// How many slots from 0 a reader must look at (telemetry.slots_hint; all when it is unset).
int SlotsToScan(const Region* region);

// Records the UUID of `device` for display if none is recorded yet.
void SetDeviceUuid(Region* region, int device, const char* uuid, const ProcIdentity& self);

// Test-only: sleep this long inside the critical section of Charge/Uncharge, to widen the
// window in which a SIGKILL lands while the lock is held. 0 (the default) disables it.
void SetCriticalSectionDelayForTest(uint32_t microseconds);

// CLOCK_MONOTONIC in nanoseconds (vDSO, no system call on Linux).
uint64_t MonotonicNowNs();

}  // namespace vgpu::shm
