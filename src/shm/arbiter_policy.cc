// The scheduling decisions of the arbiter (see arbiter_policy.h for the rules).
#include "shm/arbiter_policy.h"

#include <climits>

#include "shm/arbiter_internal.h"
#include "shm/arbiter_rules.h"
#include "shm/region_ops.h"

namespace vgpu::shm {
namespace {

using internal::Best;
using internal::CapOk;
using internal::Class;
using internal::Eligible;
using internal::Held;
using internal::HigherWaiting;
using internal::InUse;
using internal::Max;
using internal::Min;
using internal::Outranks;
using internal::QueueEnd;
using internal::TimeSlice;

constexpr uint64_t kMaxSleepNs = 20ULL * 1000 * 1000;  // waiters look again at least this often
constexpr uint64_t kMinSleepNs = 20ULL * 1000;         // and never spin faster than this
constexpr uint64_t kMinBurstWindowNs = 100ULL * 1000 * 1000;
constexpr uint64_t kMaxAccrualNs = 10ULL * 1000 * 1000 * 1000;
constexpr int64_t kCreditFloorNs = -60LL * 1000 * 1000 * 1000;
constexpr int64_t kVtimeRebase = 1LL << 61;

// The new owner's turn: its work must end within one time slice of the GPU's current busy-until.
void StartTurn(Arbiter* a, int index, uint64_t now) VGPU_REQUIRES(a->header.mutex) {
  ArbiterHeader& h = a->header;
  ArbiterSlice& s = a->slices[index];
  h.turn_epoch++;
  h.turn_start_ns = Max(now, h.busy_until_ns);
  h.turn_end_ns = h.turn_start_ns + TimeSlice(s);
  h.turn_launches = 0;
  s.turns++;
  h.turns++;
  StoreI32(h.owner, index);
  internal::BumpGenerationLocked(a);
}

void EndTurn(Arbiter* a) VGPU_REQUIRES(a->header.mutex) {
  StoreI32(a->header.owner, -1);
  internal::BumpGenerationLocked(a);
}

void AddUsage(ArbiterSlice& s, uint64_t at, int64_t ns) {
  uint64_t index = at / kUsageBucketNs;
  UsageBucket& b = s.usage[index % kUsageBuckets];
  if (b.index != index) {
    StoreU64(b.index, index);
    StoreU64(b.ns, 0);
  }
  int64_t v = static_cast<int64_t>(b.ns) + ns;
  StoreU64(b.ns, v < 0 ? 0 : static_cast<uint64_t>(v));
}

// Moves the virtual times (member `field`) of the slices that keep one down by the smallest,
// keeping their order. The guaranteed virtual time is kept by slices with a guarantee only.
void RebaseVtimes(Arbiter* a, int64_t ArbiterSlice::*field) {
  bool guaranteed = field == &ArbiterSlice::gvtime;
  auto keeps = [&](const ArbiterSlice& s) {
    return s.key != 0 && (!guaranteed || s.config.guarantee_pct > 0);
  };
  int64_t low = INT64_MAX;
  for (const ArbiterSlice& s : a->slices) {
    if (keeps(s) && s.*field < low) low = s.*field;
  }
  if (low == INT64_MAX) return;
  for (ArbiterSlice& s : a->slices) {
    if (keeps(s)) StoreI64(s.*field, s.*field - low);
  }
}

// Charges `ns` (negative: gives back) of device time to `s`, counted at time `at`.
void Charge(Arbiter* a, ArbiterSlice& s, int64_t ns, uint64_t at) {
  if (ns == 0) return;
  int64_t burst_g = CreditBurst(s.config, s.config.guarantee_pct);
  int64_t burst_m = CreditBurst(s.config, s.config.max_pct);
  int64_t g = s.credit_g_ns - ns;
  if (g > burst_g) g = burst_g;
  if (g < -burst_g) g = -burst_g;
  StoreI64(s.credit_g_ns, g);
  int64_t m = s.credit_m_ns - ns;
  if (m > burst_m) m = burst_m;
  if (m < kCreditFloorNs) m = kCreditFloorNs;
  StoreI64(s.credit_m_ns, m);
  int64_t weight = s.config.weight == 0 ? 1 : s.config.weight;
  StoreI64(s.vtime, s.vtime + ns * kWeightScale / weight);
  if (s.vtime > kVtimeRebase) RebaseVtimes(a, &ArbiterSlice::vtime);
  if (s.config.guarantee_pct > 0) {
    StoreI64(s.gvtime, s.gvtime + ns * kWeightScale / s.config.guarantee_pct);
    if (s.gvtime > kVtimeRebase) RebaseVtimes(a, &ArbiterSlice::gvtime);
  }
  int64_t used = static_cast<int64_t>(s.used_ns) + ns;
  StoreU64(s.used_ns, used < 0 ? 0 : static_cast<uint64_t>(used));
  AddUsage(s, at, ns);
}

// Validates the caller's records.
bool Mine(const Arbiter* a, int slice, int proc, const ProcIdentity& self)
    VGPU_REQUIRES(a->header.mutex) {
  if (slice < 0 || slice >= kMaxArbiterSlices || proc < 0 || proc >= kMaxArbiterProcs) {
    return false;
  }
  const ArbiterProc& p = a->procs[proc];
  return p.pid == self.pid && p.start_time == self.start_time && p.slice == slice &&
         a->slices[slice].key != 0;
}

void Unwait(ArbiterSlice& s, ArbiterProc& p) {
  if (s.waiters > 0) --s.waiters;
  if (p.waiters > 0) --p.waiters;
}

void ApplyCorrectionLocked(Arbiter* a, ArbiterSlice& s, int64_t correction, uint64_t measured,
                           uint64_t now) VGPU_REQUIRES(a->header.mutex) {
  Charge(a, s, correction, now);
  StoreU64(s.measured_ns, s.measured_ns + measured);
}

}  // namespace

int64_t CreditBurst(const ArbiterSliceConfig& config, uint32_t pct) {
  uint64_t ts = config.time_slice_ns < kMinTimeSliceNs ? kDefaultTimeSliceNs : config.time_slice_ns;
  uint64_t window = Max(20 * ts, kMinBurstWindowNs);
  return static_cast<int64_t>(window * pct / 100);
}

void AccrueCredits(ArbiterSlice* s, uint64_t now_ns) {
  if (now_ns <= s->accrued_at_ns) return;
  if (!SliceActive(*s, now_ns)) {
    // An idle slice does not hoard credit: it accrues only while it has work or waits.
    StoreU64(s->accrued_at_ns, now_ns);
    return;
  }
  uint64_t dt = Min(now_ns - s->accrued_at_ns, kMaxAccrualNs);
  int64_t burst_g = CreditBurst(s->config, s->config.guarantee_pct);
  int64_t burst_m = CreditBurst(s->config, s->config.max_pct);
  int64_t g = s->credit_g_ns + static_cast<int64_t>(dt * s->config.guarantee_pct / 100);
  int64_t m = s->credit_m_ns + static_cast<int64_t>(dt * s->config.max_pct / 100);
  StoreI64(s->credit_g_ns, g > burst_g ? burst_g : g);
  StoreI64(s->credit_m_ns, m > burst_m ? burst_m : m);
  StoreU64(s->accrued_at_ns, now_ns);
}

bool SliceActive(const ArbiterSlice& s, uint64_t now_ns) {
  if (!InUse(s)) return false;
  // Work queued, a gate waiting, or work that ended less than two time slices ago (a tenant
  // between requests still has work, even when its host is slow to ask again).
  return s.waiters > 0 || now_ns < QueueEnd(s) + 2 * TimeSlice(s);
}

AdmitDecision TryAdmit(Arbiter* a, const AdmitRequest& req, const ProcIdentity& self) {
  AdmitDecision d;
  ArbiterLock lock(a, self, kDefaultLockTimeoutMs);
  if (!lock.held()) {
    d.status = lock.status();
    return d;
  }
  if (!Mine(a, req.slice, req.proc, self)) {
    d.status = RegionError::kNoSlot;
    return d;
  }
  ArbiterHeader& h = a->header;
  const uint64_t now = req.now_ns;
  const int me_index = req.slice;
  ArbiterSlice& me = a->slices[me_index];
  ArbiterProc& proc = a->procs[req.proc];
  for (ArbiterSlice& s : a->slices) {
    if (InUse(s)) AccrueCredits(&s, now);
  }
  ApplyCorrectionLocked(a, me, req.correction_ns, req.measured_ns, now);

  // A slice coming back from idle (no work of its own on the GPU for more than a time slice)
  // starts level with the active ones (no hoarded advantage). A slice that synchronizes with
  // its work before it launches again was not idle while its work ran.
  if (!req.waiting && me.waiters == 0 && now > QueueEnd(me) + TimeSlice(me)) {
    int64_t low = INT64_MAX, low_g = INT64_MAX;
    for (int i = 0; i < kMaxArbiterSlices; ++i) {
      const ArbiterSlice& o = a->slices[i];
      if (i == me_index || !SliceActive(o, now)) continue;
      if (o.vtime < low) low = o.vtime;
      if (o.config.guarantee_pct > 0 && o.gvtime < low_g) low_g = o.gvtime;
    }
    if (low != INT64_MAX && me.vtime < low) StoreI64(me.vtime, low);
    if (low_g != INT64_MAX && me.gvtime < low_g) StoreI64(me.gvtime, low_g);
  }
  // A new request while none of the slice's gates waits: learn its arrival pattern.
  if (!req.waiting && me.waiters == 0) internal::LearnArrival(&me, now, req.estimate_ns);
  StoreU64(me.last_demand_ns, now);
  uint64_t estimate_us = (req.estimate_ns + 999) / 1000;
  me.next_estimate_us = static_cast<uint32_t>(Min(estimate_us, UINT32_MAX));
  if (!req.waiting) {
    ++me.waiters;
    ++proc.waiters;
  }
  d.waiting = true;

  // Is the current turn still valid?
  int owner = h.owner;
  int lapsed = -1;  // an owner that did not use its turn: not chosen again at once
  if (owner >= 0) {
    ArbiterSlice& o = a->slices[owner];
    bool over = !InUse(o) || now >= h.turn_end_ns;
    if (!over && owner != me_index) {
      if (o.waiters <= 0) {
        // Between launches, the owner keeps the turn from an equal while its claim holds (it is
        // expected back, it does not fit in its gap, and it outranks the asker or is still
        // launching), and from a less important slice while it holds it (Held).
        if (me.config.level == o.config.level) {
          over = !internal::ClaimHolds(a, owner, me_index, now, req.estimate_ns);
        } else if (me.config.level > o.config.level) {
          over = Eligible(a, me_index, now) || !internal::Claiming(o, now);
        } else {
          over = !internal::Claiming(o, now);
        }
      } else if (h.turn_launches == 0 &&
                 now >= Max(QueueEnd(o), h.turn_start_ns) + internal::kHandOverGraceNs) {
        // Handed the turn, its gate has not used the free GPU yet (a late wake-up): whoever
        // asks may use it (the owner keeps its rank for the next hand-over).
        over = true;
        lapsed = owner;
      }
    }
    if (over) {
      EndTurn(a);
      owner = -1;
      d.wake = true;
    }
  }

  const uint64_t est = req.estimate_ns;
  uint64_t self_wait_until = 0;
  // 0: fits in the turn; 1: the turn has room but not yet (queue-ahead bound); 2: turn is full.
  // 0: fits in the turn; 1: the turn has room but not yet (queue-ahead bound: the GPU may have
  // at most one time slice of work queued, plus the first launch of a turn); 2: turn is full.
  auto fit = [&]() -> int {
    uint64_t start = Max(now, h.busy_until_ns);
    uint64_t end = start + est;
    if (h.turn_launches == 0) return 0;
    if (end > h.turn_end_ns) return 2;
    if (end > now + TimeSlice(me) && start > now) {
      self_wait_until = end - TimeSlice(me);
      return 1;
    }
    return 0;
  };

  uint64_t unheld_at = UINT64_MAX;
  if (owner == me_index) {
    bool higher_waiting = HigherWaiting(a, me_index, now);
    if (higher_waiting || Held(a, me_index, now, est, &unheld_at)) {
      // A more important slice waits, or is expected back before this launch would end: the
      // owner stops at this kernel boundary.
      if (higher_waiting) {
        ++me.preempted;
        ++h.preemptions;
      }
      EndTurn(a);
      owner = -1;
      d.wake = true;
    } else if (!CapOk(me)) {
      EndTurn(a);
      owner = -1;
      d.wake = true;
    } else if (int f = fit(); f == 2) {
      EndTurn(a);
      owner = -1;
      d.wake = true;
    }
  } else if (owner >= 0 && Eligible(a, me_index, now) && Class(me) > Class(a->slices[owner])) {
    ArbiterSlice& o = a->slices[owner];
    ++o.preempted;
    ++h.preemptions;
    EndTurn(a);
    owner = -1;
    d.wake = true;
  }
  if (owner < 0) {
    int best = Best(a, now, lapsed);
    if (best >= 0) {
      StartTurn(a, best, now);
      owner = best;
      d.wake = true;
    }
  }

  if (owner == me_index && fit() == 0) {
    uint64_t start = Max(now, h.busy_until_ns);
    // The slice's own queue had run dry: it keeps one kernel in flight, or its host is slow.
    const bool shallow = me.busy_until_ns <= now;
    // The launch reaches the driver under the lock, so the GPU queues work in the order the
    // arbiter admitted it: its model of the queue stays true.
    uint64_t launch_ns = MonotonicNowNs();
    if (req.submit != nullptr) {
      d.submit_rc = req.submit(req.submit_arg);
      d.submitted = true;
      if (d.submit_rc != 0) {
        Unwait(me, proc);
        d.waiting = false;
        return d;  // the driver refused it: nothing was queued, nothing is charged
      }
    }
    h.last_proc = req.proc;
    uint64_t seq = h.next_seq++;
    LaunchRecord& rec = a->launches[seq % kLaunchRecords];
    StoreU64(rec.seq, 0);  // invalid while it is rewritten
    rec.key = me.key;
    rec.slice = me_index;
    rec.proc = req.proc;
    rec.launch_ns = launch_ns;
    rec.estimate_ns = est;
    rec.end_ns = 0;
    rec.duration_ns = 0;
    std::atomic_ref<uint32_t>(rec.flags).store(0, std::memory_order_relaxed);
    StoreU64(rec.seq, seq);
    d.seq = seq;
    StoreU64(me.last_seq, seq);
    Charge(a, me, static_cast<int64_t>(est), start);
    StoreU64(h.busy_until_ns, start + est);
    StoreU64(me.busy_until_ns, start + est);
    StoreU64(me.last_launch_ns, now);
    StoreU64(me.kernels, me.kernels + 1);
    StoreU64(me.held_ns, me.held_ns + req.held_ns);
    ++h.turn_launches;
    Unwait(me, proc);
    d.waiting = false;
    d.admitted = true;
    d.start_ns = start;
    d.turn_epoch = h.turn_epoch;
    // Hand the turn over now, so that the next owner queues its work while ours still runs (no
    // gap at the switch), if this launch used the turn up, or a more important slice waits, or
    // our queue runs dry after this launch and another slice now ranks first (a slice with one
    // kernel in flight takes its turns a kernel at a time: another's kernel hides its launch
    // latency); or if no gate of ours waits and a less important slice's next launch fits
    // before we are expected back.
    bool capped_out = !CapOk(me);
    bool used_up = capped_out || start + 2 * est > h.turn_end_ns;
    bool other_claiming = false;
    bool other_waiting = internal::OtherWaiting(a, me_index, now, &other_claiming);
    if (!other_waiting && !other_claiming) {
      if (capped_out) {  // nobody to hand over to
        EndTurn(a);
        d.wake = true;
      }
      return d;
    }
    bool higher_waiting = other_waiting && HigherWaiting(a, me_index, now);
    bool gap = me.waiters == 0 && other_waiting;
    bool dry = shallow && me.waiters == 0;
    if (used_up || gap || higher_waiting || dry) {
      int best = Best(a, now, me_index);
      const ArbiterSlice* b = best >= 0 ? &a->slices[best] : nullptr;
      bool fills_gap = gap && b != nullptr && b->waiters > 0 && b->config.level > me.config.level;
      // (A more important slice that is not asking yet takes its turn when it asks: until then
      // only launches that end before it is back are admitted, see Held.)
      bool dry_next = dry && b != nullptr && (b->waiters > 0 || b->config.level >= me.config.level);
      bool next = b != nullptr && (used_up || higher_waiting || dry_next) &&
                  (capped_out || Outranks(*b, me));
      if (next || fills_gap) {
        StartTurn(a, best, now);
        d.wake = true;
      } else if (!CapOk(me)) {
        EndTurn(a);
        d.wake = true;
      }
    }
    return d;
  }

  // Not now: when could the answer change without anyone waking us?
  uint64_t retry = now + kMaxSleepNs;
  if (owner == me_index) {
    if (self_wait_until > now) retry = Min(retry, self_wait_until);
  } else if (owner >= 0) {
    const ArbiterSlice& o = a->slices[owner];
    retry = Min(retry, h.turn_end_ns);
    if (o.waiters <= 0) {
      // Its claim lapses; its queue runs dry; it starts pausing (its gap may take this launch).
      retry = Min(retry, internal::ClaimEnd(o));
      if (QueueEnd(o) > now) retry = Min(retry, QueueEnd(o));
      uint64_t pause_at = o.last_launch_ns + internal::kPauseNs;
      if (o.idle_gap_ns > 0 && pause_at > now) retry = Min(retry, pause_at);
    } else if (h.turn_launches == 0) {
      retry = Min(retry, Max(QueueEnd(o), h.turn_start_ns) + internal::kHandOverGraceNs);
    }
  }
  if (!CapOk(me)) {
    uint64_t need = static_cast<uint64_t>(-me.credit_m_ns) + 1;
    retry = Min(retry, now + need * 100 / me.config.max_pct + 1);
  }
  if (me.config.guarantee_pct > 0 && me.credit_g_ns <= 0) {
    uint64_t need = static_cast<uint64_t>(-me.credit_g_ns) + 1;
    retry = Min(retry, now + need * 100 / me.config.guarantee_pct + 1);
  }
  Held(a, me_index, now, est, &retry);
  d.retry_at_ns = Max(retry, now + kMinSleepNs);
  d.generation = std::atomic_ref<uint32_t>(h.generation).load(std::memory_order_acquire);
  return d;
}

namespace {

// True while the slice that made launch `rec` is still there (its record not freed or reused):
// only then may its end still be reported.
bool LauncherPresent(const Arbiter* a, const LaunchRecord& rec) {
  return rec.slice >= 0 && rec.slice < kMaxArbiterSlices && a->slices[rec.slice].key == rec.key &&
         a->slices[rec.slice].members > 0;
}

// Measures `rec` if its end and its predecessor's end are known. A predecessor whose slice has
// gone (its processes exited before reporting its end) will never end: `rec` is measured from
// its own launch then, as if it had none.
bool Measure(Arbiter* a, LaunchRecord& rec, uint64_t now) VGPU_REQUIRES(a->header.mutex) {
  if ((rec.flags & kLaunchEnded) == 0 || (rec.flags & kLaunchMeasured) != 0) return false;
  const LaunchRecord& pred = a->launches[(rec.seq - 1) % kLaunchRecords];
  uint64_t begin = rec.launch_ns;
  if (rec.seq > 1 && pred.seq == rec.seq - 1) {  // seq 0 is never used
    if ((pred.flags & kLaunchEnded) != 0) {
      begin = Max(begin, pred.end_ns);
    } else if (LauncherPresent(a, pred)) {
      return false;
    }
  }
  uint64_t duration = rec.end_ns > begin ? rec.end_ns - begin : 0;
  StoreU64(rec.duration_ns, duration);
  std::atomic_ref<uint32_t>(rec.flags).fetch_or(kLaunchMeasured, std::memory_order_release);
  if (rec.slice >= 0 && rec.slice < kMaxArbiterSlices && a->slices[rec.slice].key == rec.key) {
    ArbiterSlice& s = a->slices[rec.slice];
    AccrueCredits(&s, now);
    ApplyCorrectionLocked(a, s,
                          static_cast<int64_t>(duration) - static_cast<int64_t>(rec.estimate_ns),
                          duration, now);
  }
  return true;
}

}  // namespace

void ReportEnds(Arbiter* a, int slice, int proc, const uint64_t* seqs, const uint64_t* ends,
                int count, const ProcIdentity& self, uint64_t now_ns) {
  if (count <= 0) return;
  ArbiterLock lock(a, self, kDefaultLockTimeoutMs);
  if (!lock.held() || !Mine(a, slice, proc, self)) return;
  ArbiterHeader& h = a->header;
  for (int i = 0; i < count; ++i) {
    LaunchRecord& rec = a->launches[seqs[i] % kLaunchRecords];
    if (rec.seq != seqs[i] || rec.proc != proc) continue;
    StoreU64(rec.end_ns, ends[i]);
    std::atomic_ref<uint32_t>(rec.flags).fetch_or(kLaunchEnded, std::memory_order_release);
    // The last admitted launch has ended: the GPU's queue is empty from then on.
    if (rec.seq + 1 == h.next_seq) StoreU64(h.busy_until_ns, ends[i]);
    // The slice's last launch has ended: its queue is empty from then on (its estimate may have
    // been long or short).
    if (rec.slice >= 0 && rec.slice < kMaxArbiterSlices) {
      ArbiterSlice& s = a->slices[rec.slice];
      if (s.key == rec.key && s.last_seq == rec.seq) StoreU64(s.busy_until_ns, ends[i]);
    }
    // Measure it, and the ones after it that were waiting for this end.
    for (uint64_t seq = rec.seq; seq < h.next_seq && seq + kLaunchRecords > rec.seq; ++seq) {
      LaunchRecord& r = a->launches[seq % kLaunchRecords];
      if (r.seq != seq || !Measure(a, r, now_ns)) break;
    }
  }
}

bool LaunchDuration(const Arbiter* a, uint64_t seq, uint64_t* duration_ns) {
  const LaunchRecord& rec = a->launches[seq % kLaunchRecords];
  uint32_t flags =
      std::atomic_ref<uint32_t>(const_cast<uint32_t&>(rec.flags)).load(std::memory_order_acquire);
  if ((flags & kLaunchMeasured) == 0) return false;
  uint64_t duration = LoadU64(rec.duration_ns);
  if (LoadU64(rec.seq) != seq) return false;
  *duration_ns = duration;
  return true;
}

void CancelWait(Arbiter* a, int slice, int proc, int64_t correction_ns, uint64_t measured_ns,
                const ProcIdentity& self, uint64_t now_ns) {
  ArbiterLock lock(a, self, kDefaultLockTimeoutMs);
  if (!lock.held() || !Mine(a, slice, proc, self)) return;
  ArbiterSlice& s = a->slices[slice];
  AccrueCredits(&s, now_ns);
  ApplyCorrectionLocked(a, s, correction_ns, measured_ns, now_ns);
  Unwait(s, a->procs[proc]);
  internal::BumpGenerationLocked(a);
}

void ApplyCorrection(Arbiter* a, int slice, int proc, int64_t correction_ns, uint64_t measured_ns,
                     const ProcIdentity& self, uint64_t now_ns) {
  if (correction_ns == 0 && measured_ns == 0) return;
  ArbiterLock lock(a, self, kDefaultLockTimeoutMs);
  if (!lock.held() || !Mine(a, slice, proc, self)) return;
  ArbiterSlice& s = a->slices[slice];
  AccrueCredits(&s, now_ns);
  ApplyCorrectionLocked(a, s, correction_ns, measured_ns, now_ns);
}

}  // namespace vgpu::shm
