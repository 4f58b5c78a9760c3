#include "shm/region_ops.h"

#include "shm/region_resize.h"
#include "shm/robust_mutex.h"

#include <errno.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace vgpu::shm {
namespace {

std::atomic<uint32_t> g_critical_delay_us{0};

void CriticalSectionDelay() {
  uint32_t us = g_critical_delay_us.load(std::memory_order_relaxed);
  if (us == 0) return;
  struct timespec ts;
  ts.tv_sec = us / 1000000;
  ts.tv_nsec = static_cast<long>(us % 1000000) * 1000;
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

uint64_t SatSub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

bool ValidIndex(int slot_index, int device) {
  return slot_index >= 0 && slot_index < kMaxProcs && device >= 0 && device < kMaxDevices;
}

uint64_t EffectiveLimit(const Region* region, int device, uint64_t process_limit) {
  uint64_t slice = MemoryLimitInForce(region, device);
  return slice < process_limit ? slice : process_limit;
}

uint64_t* CounterFields(ProcCounters& c) { return &c.launches; }
constexpr int kCounterFields = sizeof(ProcCounters) / sizeof(uint64_t);

// Adds the slot's counters to the slice's folded totals and zeroes them, inside the telemetry
// seqlock (readers retry while fold_seq is odd or moved). REQUIRES: region mutex held.
void FoldCountersLocked(Region* region, ProcSlot& slot) {
  SliceTelemetry& t = region->header.telemetry;
  const uint64_t last = LoadU64(slot.last_kernel_ns);
  if (last > LoadU64(t.last_kernel_ns)) StoreU64(t.last_kernel_ns, last);
  uint64_t* from = CounterFields(slot.counters);
  uint64_t* to = CounterFields(t.folded);
  bool any = false;
  for (int i = 0; i < kCounterFields; ++i) any = any || LoadU64(from[i]) != 0;
  if (!any) return;
  std::atomic_ref<uint64_t> seq(t.fold_seq);
  seq.fetch_add(1, std::memory_order_acq_rel);
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 0; i < kCounterFields; ++i) {
    uint64_t v = std::atomic_ref<uint64_t>(from[i]).exchange(0, std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(to[i]).fetch_add(v, std::memory_order_relaxed);
  }
  seq.fetch_add(1, std::memory_order_release);
}

// Raises the device's peak after device_used[] grew. REQUIRES: region mutex held.
void NotePeakLocked(RegionHeader& h, int device) {
  uint64_t used = h.device_used[device];
  if (used > h.telemetry.peak_used[device]) StoreU64(h.telemetry.peak_used[device], used);
}

// Frees a slot's charges and the slot. REQUIRES: region mutex held.
void FreeSlotLocked(Region* region, ProcSlot& slot) {
  RegionHeader& h = region->header;
  FoldCountersLocked(region, slot);
  for (int d = 0; d < kMaxDevices; ++d) {
    uint64_t used = slot.used[d];
    if (used != 0) StoreU64(h.device_used[d], SatSub(h.device_used[d], used));
    StoreU64(slot.used[d], 0);
  }
  slot.start_time = 0;
  slot.pid_ns = 0;
  slot.flags = 0;
  slot.last_kernel_ns = 0;
  StorePid(slot, 0);
}

// Rebuilds device_used[] from the slots after a holder died mid-update, and frees dead slots.
// REQUIRES: region mutex held (just acquired with EOWNERDEAD).
void RepairLocked(Region* region, const ProcIdentity& self) {
  RegionHeader& h = region->header;
  // A holder killed inside a fold left the sequence odd: close it (the fields it had not moved
  // yet are still in the dead slot, and are folded when the slot is freed below).
  std::atomic_ref<uint64_t> seq(h.telemetry.fold_seq);
  if ((seq.load(std::memory_order_relaxed) & 1) != 0) seq.fetch_add(1, std::memory_order_release);
  for (ProcSlot& slot : region->slots) {
    if (LoadPid(slot) != 0 && CheckLiveness(slot, self.pid_ns) == Liveness::kDead) {
      FreeSlotLocked(region, slot);
      ++h.reclaimed;
    }
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    uint64_t sum = 0;
    for (const ProcSlot& slot : region->slots) {
      if (LoadPid(slot) != 0) sum += slot.used[d];
    }
    StoreU64(h.device_used[d], sum);
  }
  RepairResizeLocked(region);
  ++h.repairs;
}

}  // namespace

uint64_t MonotonicNowNs() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

void SetCriticalSectionDelayForTest(uint32_t microseconds) {
  g_critical_delay_us.store(microseconds, std::memory_order_relaxed);
}

RegionLock::RegionLock(Region* region, const ProcIdentity& self, int timeout_ms) : region_(region) {
  pthread_mutex_t* m = &region->header.mutex.mutex;
  const RobustLock rc = LockRobust(m, timeout_ms);
  if (rc == RobustLock::kAcquired) {
    status_ = RegionError::kOk;
  } else if (rc == RobustLock::kOwnerDied) {
    RepairLocked(region, self);
    pthread_mutex_consistent(m);
    repaired_ = true;
    status_ = RegionError::kOk;
  } else if (rc == RobustLock::kTimedOut) {
    status_ = RegionError::kLockTimeout;
  } else {
    status_ = RegionError::kLockBroken;
  }
}

RegionLock::~RegionLock() {
  if (held()) pthread_mutex_unlock(&region_->header.mutex.mutex);
}

RegionError ClaimSlot(Region* region, const ProcIdentity& self, int* slot_index) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      RegionLock lock(region, self, kDefaultLockTimeoutMs);
      if (!lock.held()) return lock.status();
      int free_slot = -1;
      for (int i = 0; i < kMaxProcs; ++i) {
        ProcSlot& slot = region->slots[i];
        int32_t pid = LoadPid(slot);
        if (pid == self.pid && slot.start_time == self.start_time && slot.pid_ns == self.pid_ns) {
          // This process image before an exec: its device memory is gone with the old image.
          FreeSlotLocked(region, slot);
        }
        if (LoadPid(slot) == 0 && free_slot < 0) free_slot = i;
      }
      if (free_slot >= 0) {
        ProcSlot& slot = region->slots[free_slot];
        slot.start_time = self.start_time;
        slot.pid_ns = self.pid_ns;
        slot.flags = 0;
        for (uint64_t& u : slot.used) StoreU64(u, 0);
        FoldCountersLocked(region, slot);  // left by a process that counted after its release
        uint32_t& hint = region->header.telemetry.slots_hint;
        if (static_cast<uint32_t>(free_slot) >= hint) {
          std::atomic_ref<uint32_t>(hint).store(static_cast<uint32_t>(free_slot) + 1,
                                                std::memory_order_release);
        }
        StorePid(slot, self.pid);
        *slot_index = free_slot;
        return RegionError::kOk;
      }
    }
    if (SweepDeadSlots(region, self) == 0) break;
  }
  return RegionError::kNoSlot;
}

void ReleaseSlot(Region* region, int slot_index, const ProcIdentity& self) {
  if (!ValidIndex(slot_index, 0)) return;
  RegionLock lock(region, self, kDefaultLockTimeoutMs);
  if (!lock.held()) return;
  ProcSlot& slot = region->slots[slot_index];
  if (LoadPid(slot) == self.pid && slot.start_time == self.start_time) {
    FreeSlotLocked(region, slot);
  }
}

RegionError Charge(Region* region, int slot_index, int device, uint64_t bytes,
                   uint64_t process_limit, const ProcIdentity& self) {
  if (!ValidIndex(slot_index, device)) return RegionError::kOverLimit;
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      RegionLock lock(region, self, kDefaultLockTimeoutMs);
      if (!lock.held()) return lock.status();
      RegionHeader& h = region->header;
      ProcSlot& slot = region->slots[slot_index];
      if (LoadPid(slot) != self.pid) return RegionError::kNoSlot;  // reclaimed under us
      uint64_t limit = EffectiveLimit(region, device, process_limit);
      uint64_t used = h.device_used[device];
      if (bytes <= limit && used <= limit - bytes) {
        StoreU64(h.device_used[device], used + bytes);
        CriticalSectionDelay();
        StoreU64(slot.used[device], slot.used[device] + bytes);
        NotePeakLocked(h, device);
        return RegionError::kOk;
      }
    }
    if (attempt == 0 && SweepDeadSlots(region, self) == 0) break;
  }
  return RegionError::kOverLimit;
}

uint64_t ChargeUpTo(Region* region, int slot_index, int device, uint64_t bytes,
                    uint64_t process_limit, const ProcIdentity& self) {
  if (!ValidIndex(slot_index, device) || bytes == 0) return 0;
  RegionLock lock(region, self, kDefaultLockTimeoutMs);
  if (!lock.held()) return 0;
  RegionHeader& h = region->header;
  ProcSlot& slot = region->slots[slot_index];
  if (LoadPid(slot) != self.pid) return 0;
  uint64_t limit = EffectiveLimit(region, device, process_limit);
  uint64_t used = h.device_used[device];
  uint64_t room = SatSub(limit, used);
  uint64_t granted = bytes < room ? bytes : room;
  StoreU64(h.device_used[device], used + granted);
  StoreU64(slot.used[device], slot.used[device] + granted);
  NotePeakLocked(h, device);
  return granted;
}

void Uncharge(Region* region, int slot_index, int device, uint64_t bytes,
              const ProcIdentity& self) {
  if (!ValidIndex(slot_index, device) || bytes == 0) return;
  RegionLock lock(region, self, kDefaultLockTimeoutMs);
  if (!lock.held()) return;
  RegionHeader& h = region->header;
  ProcSlot& slot = region->slots[slot_index];
  if (LoadPid(slot) != self.pid) return;
  // Never give back more than this process holds: an unknown or double free cannot drain
  // other processes' charges.
  uint64_t held = slot.used[device];
  uint64_t amount = bytes < held ? bytes : held;
  StoreU64(slot.used[device], held - amount);
  CriticalSectionDelay();
  StoreU64(h.device_used[device], SatSub(h.device_used[device], amount));
}

int SweepDeadSlots(Region* region, const ProcIdentity& self) {
  // Find candidates without the lock (system calls), then free them under it after checking that
  // the slot still holds the same process.
  int freed = 0;
  StoreU64(region->header.last_sweep_ns, MonotonicNowNs());
  for (int i = 0; i < kMaxProcs; ++i) {
    ProcSlot& slot = region->slots[i];
    int32_t pid = LoadPid(slot);
    uint64_t start = LoadU64(slot.start_time);
    if (pid == 0 || (pid == self.pid && start == self.start_time)) continue;
    if (CheckLiveness(slot, self.pid_ns) != Liveness::kDead) continue;
    RegionLock lock(region, self, kDefaultLockTimeoutMs);
    if (!lock.held()) return freed;
    if (LoadPid(slot) == pid && slot.start_time == start) {
      FreeSlotLocked(region, slot);
      ++region->header.reclaimed;
      ++freed;
    }
  }
  return freed;
}

int MaybeSweep(Region* region, const ProcIdentity& self) {
  uint64_t now = MonotonicNowNs();
  uint64_t& last_field = region->header.last_sweep_ns;
  uint64_t last = LoadU64(last_field);
  if (now - last < kSweepIntervalNs && now >= last) return 0;
  // One sweeper per interval: whoever moves the timestamp sweeps.
  if (!std::atomic_ref<uint64_t>(last_field).compare_exchange_strong(last, now)) return 0;
  return SweepDeadSlots(region, self);
}

uint64_t DeviceUsed(const Region* region, int device) {
  if (device < 0 || device >= kMaxDevices) return 0;
  return LoadU64(region->header.device_used[device]);
}

uint64_t ConfigLimit(const Region* region, int device) {
  return MemoryLimitInForce(region, device);
}

uint64_t SlotUsed(const Region* region, int slot_index, int device) {
  if (!ValidIndex(slot_index, device)) return 0;
  return LoadU64(region->slots[slot_index].used[device]);
}

void SetDeviceUuid(Region* region, int device, const char* uuid, const ProcIdentity& self) {
  if (device < 0 || device >= kMaxDevices || uuid == nullptr) return;
  if (region->header.uuid[device][0] != '\0') return;
  RegionLock lock(region, self, kDefaultLockTimeoutMs);
  if (!lock.held()) return;
  char* dst = region->header.uuid[device];
  if (dst[0] != '\0') return;
  size_t n = std::strlen(uuid);
  if (n >= static_cast<size_t>(kUuidLength)) n = kUuidLength - 1;
  std::memcpy(dst, uuid, n);
  dst[n] = '\0';
}

int SlotsToScan(const Region* region) {
  // A region made by an older minor may hold slots claimed by a library that keeps no hint.
  if (region->header.minor < 4) return kMaxProcs;
  const uint32_t hint = LoadU32(region->header.telemetry.slots_hint);
  return hint == 0 || hint > static_cast<uint32_t>(kMaxProcs) ? kMaxProcs : static_cast<int>(hint);
}

bool ReadSliceCounters(const Region* region, SliceCounters* out) {
  const SliceTelemetry& t = region->header.telemetry;
  auto& seq_field = const_cast<uint64_t&>(t.fold_seq);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const uint64_t before = std::atomic_ref<uint64_t>(seq_field).load(std::memory_order_acquire);
    if ((before & 1) != 0) continue;
    ProcCounters sum{};
    uint64_t* s = CounterFields(sum);
    auto add = [&](const ProcCounters& c) {
      const uint64_t* f = &c.launches;
      for (int i = 0; i < kCounterFields; ++i) s[i] += LoadU64(f[i]);
    };
    add(t.folded);
    uint64_t last = LoadU64(t.last_kernel_ns);
    int live = 0;
    const int n = SlotsToScan(region);
    for (int i = 0; i < n; ++i) {
      const ProcSlot& slot = region->slots[i];
      if (LoadPid(slot) == 0) continue;
      add(slot.counters);
      last = std::max(last, LoadU64(slot.last_kernel_ns));
      ++live;
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (std::atomic_ref<uint64_t>(seq_field).load(std::memory_order_relaxed) != before) continue;
    out->totals = sum;
    out->last_kernel_ns = last;
    out->processes = live;
    out->counting = (LoadU32(t.flags) & kTelemetryCounting) != 0;
    for (int d = 0; d < kMaxDevices; ++d) out->peak_used[d] = LoadU64(t.peak_used[d]);
    return true;
  }
  return false;
}

}  // namespace vgpu::shm
