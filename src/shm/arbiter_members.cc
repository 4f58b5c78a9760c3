// Membership of the arbiter: the robust lock and its repair, joining and leaving, the dead-process
// sweep, and the futex on which waiting gates sleep. The scheduling decisions are in
// arbiter_policy.cc.
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "shm/arbiter_internal.h"
#include "shm/arbiter_policy.h"
#include "shm/region_ops.h"
#include "shm/robust_mutex.h"

namespace vgpu::shm {
namespace {

void FreeProcLocked(Arbiter* a, int p) VGPU_REQUIRES(a->header.mutex) {
  ArbiterProc& rec = a->procs[p];
  int s = rec.slice;
  if (s >= 0 && s < kMaxArbiterSlices) {
    ArbiterSlice& slice = a->slices[s];
    slice.waiters -= rec.waiters;
    if (slice.waiters < 0) slice.waiters = 0;
    --slice.members;
    if (slice.members < 0) slice.members = 0;
  }
  rec.slice = -1;
  rec.waiters = 0;
  rec.start_time = 0;
  rec.pid_ns = 0;
  StoreI32(rec.pid, 0);
}

}  // namespace

namespace internal {

bool ReleaseEmptySlicesLocked(Arbiter* a) {
  bool wake = false;
  for (int s = 0; s < kMaxArbiterSlices; ++s) {
    ArbiterSlice& slice = a->slices[s];
    if (slice.key == 0 || slice.members > 0) continue;
    if (a->header.owner == s) {
      StoreI32(a->header.owner, -1);
      wake = true;
    }
    std::memset(&slice, 0, sizeof(slice));
  }
  if (wake) BumpGenerationLocked(a);
  return wake;
}

void BumpGenerationLocked(Arbiter* a) {
  std::atomic_ref<uint32_t>(a->header.generation).fetch_add(1, std::memory_order_release);
}

void RepairLocked(Arbiter* a, const ProcIdentity& self) {
  for (ArbiterSlice& slice : a->slices) {
    slice.members = 0;
    slice.waiters = 0;
  }
  for (int p = 0; p < kMaxArbiterProcs; ++p) {
    ArbiterProc& rec = a->procs[p];
    if (LoadI32(rec.pid) == 0) continue;
    bool bad_slice =
        rec.slice < 0 || rec.slice >= kMaxArbiterSlices || a->slices[rec.slice].key == 0;
    ProcSlot probe{};
    probe.pid = rec.pid;
    probe.start_time = rec.start_time;
    probe.pid_ns = rec.pid_ns;
    if (bad_slice || CheckLiveness(probe, self.pid_ns) == Liveness::kDead) {
      rec.slice = -1;
      rec.waiters = 0;
      StoreI32(rec.pid, 0);
      ++a->header.reclaimed;
      continue;
    }
    if (rec.waiters < 0) rec.waiters = 0;
    ++a->slices[rec.slice].members;
    a->slices[rec.slice].waiters += rec.waiters;
  }
  ReleaseEmptySlicesLocked(a);
  int32_t owner = a->header.owner;
  if (owner < -1 || owner >= kMaxArbiterSlices || (owner >= 0 && a->slices[owner].key == 0)) {
    StoreI32(a->header.owner, -1);
  }
  ++a->header.repairs;
  BumpGenerationLocked(a);
}

}  // namespace internal

ArbiterLock::ArbiterLock(Arbiter* arbiter, const ProcIdentity& self, int timeout_ms)
    : arbiter_(arbiter) {
  pthread_mutex_t* m = &arbiter->header.mutex.mutex;
  const RobustLock rc = LockRobust(m, timeout_ms);
  if (rc == RobustLock::kAcquired) {
    status_ = RegionError::kOk;
  } else if (rc == RobustLock::kOwnerDied) {
    internal::RepairLocked(arbiter, self);
    pthread_mutex_consistent(m);
    status_ = RegionError::kOk;
  } else if (rc == RobustLock::kTimedOut) {
    status_ = RegionError::kLockTimeout;
  } else {
    status_ = RegionError::kLockBroken;
  }
}

ArbiterLock::~ArbiterLock() {
  if (held()) pthread_mutex_unlock(&arbiter_->header.mutex.mutex);
}

uint64_t SliceKey(const char* region_path) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char* p = region_path; p != nullptr && *p != '\0'; ++p) {
    hash ^= static_cast<unsigned char>(*p);
    hash *= 0x100000001b3ULL;
  }
  return hash == 0 ? 1 : hash;
}

RegionError JoinArbiter(Arbiter* a, uint64_t key, const char* name,
                        const ArbiterSliceConfig& config, const ProcIdentity& self, uint64_t now_ns,
                        int* slice_out, int* proc_out) {
  if (key == 0 || !ValidSliceConfig(config)) return RegionError::kCorrupt;
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      ArbiterLock lock(a, self, kDefaultLockTimeoutMs);
      if (!lock.held()) return lock.status();
      // This process image before an exec: drop its old record.
      for (int p = 0; p < kMaxArbiterProcs; ++p) {
        ArbiterProc& rec = a->procs[p];
        if (LoadI32(rec.pid) == self.pid && rec.start_time == self.start_time &&
            rec.pid_ns == self.pid_ns) {
          FreeProcLocked(a, p);
        }
      }
      internal::ReleaseEmptySlicesLocked(a);
      int s = -1, free_s = -1;
      for (int i = 0; i < kMaxArbiterSlices; ++i) {
        if (a->slices[i].key == key) {
          s = i;
          break;
        }
        if (a->slices[i].key == 0 && free_s < 0) free_s = i;
      }
      int p = -1;
      for (int i = 0; i < kMaxArbiterProcs && p < 0; ++i) {
        if (LoadI32(a->procs[i].pid) == 0) p = i;
      }
      if (p >= 0 && (s >= 0 || free_s >= 0)) {
        if (s < 0) {
          s = free_s;
          ArbiterSlice& slice = a->slices[s];
          std::memset(&slice, 0, sizeof(slice));
          slice.config = config;
          if (slice.config.mode == kModeCapped) {
            slice.config.guarantee_pct = config.max_pct < 100 ? config.max_pct : 0;
          }
          if (name != nullptr) {
            size_t n = std::strlen(name);
            if (n >= sizeof(slice.name)) n = sizeof(slice.name) - 1;
            std::memcpy(slice.name, name, n);
          }
          slice.accrued_at_ns = now_ns;
          // Start level with the slices already there, so that a newcomer neither starves
          // them nor is starved by their history.
          int64_t min_vt = INT64_MAX, min_gvt = INT64_MAX;
          for (const ArbiterSlice& other : a->slices) {
            if (other.key == 0 || other.members <= 0) continue;
            if (other.vtime < min_vt) min_vt = other.vtime;
            if (other.config.guarantee_pct > 0 && other.gvtime < min_gvt) min_gvt = other.gvtime;
          }
          slice.vtime = min_vt == INT64_MAX ? 0 : min_vt;
          slice.gvtime = min_gvt == INT64_MAX ? 0 : min_gvt;
          struct timespec ts;
          ::clock_gettime(CLOCK_REALTIME, &ts);
          slice.joined_unix_ns =
              static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
          std::atomic_ref<uint64_t>(slice.key).store(key, std::memory_order_release);
        }
        ArbiterProc& rec = a->procs[p];
        rec.slice = s;
        rec.start_time = self.start_time;
        rec.pid_ns = self.pid_ns;
        rec.waiters = 0;
        rec.joined_ns = now_ns;
        StoreI32(rec.pid, self.pid);
        ++a->slices[s].members;
        *slice_out = s;
        *proc_out = p;
        return RegionError::kOk;
      }
    }
    if (!SweepArbiter(a, self, now_ns)) break;
  }
  return RegionError::kNoSlot;
}

bool LeaveArbiter(Arbiter* a, int slice, int proc, const ProcIdentity& self, uint64_t now_ns) {
  (void)now_ns;
  if (proc < 0 || proc >= kMaxArbiterProcs || slice < 0 || slice >= kMaxArbiterSlices) {
    return false;
  }
  ArbiterLock lock(a, self, kDefaultLockTimeoutMs);
  if (!lock.held()) return false;
  ArbiterProc& rec = a->procs[proc];
  if (LoadI32(rec.pid) != self.pid || rec.start_time != self.start_time || rec.slice != slice) {
    return false;
  }
  FreeProcLocked(a, proc);
  bool wake = internal::ReleaseEmptySlicesLocked(a);
  if (!wake) internal::BumpGenerationLocked(a);
  return true;
}

bool SweepArbiter(Arbiter* a, const ProcIdentity& self, uint64_t now_ns) {
  StoreU64(a->header.last_sweep_ns, now_ns);
  bool freed = false;
  for (int p = 0; p < kMaxArbiterProcs; ++p) {
    ArbiterProc& rec = a->procs[p];
    int32_t pid = LoadI32(rec.pid);
    uint64_t start = LoadU64(rec.start_time);
    if (pid == 0 || (pid == self.pid && start == self.start_time)) continue;
    ProcSlot probe{};
    probe.pid = pid;
    probe.start_time = start;
    probe.pid_ns = LoadU64(rec.pid_ns);
    if (CheckLiveness(probe, self.pid_ns) != Liveness::kDead) continue;
    ArbiterLock lock(a, self, kDefaultLockTimeoutMs);
    if (!lock.held()) return freed;
    if (LoadI32(rec.pid) == pid && rec.start_time == start) {
      FreeProcLocked(a, p);
      ++a->header.reclaimed;
      freed = true;
    }
  }
  if (freed) {
    ArbiterLock lock(a, self, kDefaultLockTimeoutMs);
    if (lock.held()) {
      internal::ReleaseEmptySlicesLocked(a);
      internal::BumpGenerationLocked(a);
    }
  }
  return freed;
}

bool MaybeSweepArbiter(Arbiter* a, const ProcIdentity& self, uint64_t now_ns) {
  uint64_t& field = a->header.last_sweep_ns;
  uint64_t last = LoadU64(field);
  if (now_ns >= last && now_ns - last < kArbiterSweepIntervalNs) return false;
  if (!std::atomic_ref<uint64_t>(field).compare_exchange_strong(last, now_ns)) return false;
  return SweepArbiter(a, self, now_ns);
}

void WaitArbiter(Arbiter* a, uint32_t seen, uint64_t until_ns) {
  uint64_t now = MonotonicNowNs();
  if (until_ns <= now) return;
  uint32_t* word = &a->header.generation;
  if (std::atomic_ref<uint32_t>(*word).load(std::memory_order_acquire) != seen) return;
  uint64_t wait = until_ns - now;
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(wait / 1000000000ULL);
  ts.tv_nsec = static_cast<long>(wait % 1000000000ULL);
  std::atomic_ref<uint32_t>(a->header.sleepers).fetch_add(1, std::memory_order_acq_rel);
  ::syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, nullptr, 0);
  std::atomic_ref<uint32_t>(a->header.sleepers).fetch_sub(1, std::memory_order_acq_rel);
}

void WakeArbiter(Arbiter* a) {
  if (std::atomic_ref<uint32_t>(a->header.sleepers).load(std::memory_order_acquire) == 0) return;
  ::syscall(SYS_futex, &a->header.generation, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace vgpu::shm
