// The arbiter's ranking and holding rules (see arbiter_rules.h and arbiter_policy.h).
#include "shm/arbiter_rules.h"

#include <climits>

#include "shm/region_ops.h"

namespace vgpu::shm::internal {
namespace {

constexpr uint64_t kGapStepNs = 10ULL * 1000;  // the learnt gap grows by at most 1/4 + this
// A slice between launches counts as gone (no longer holding less important ones) after this many
// of its time slices, or four of its learnt gaps, past the end of its queue.
constexpr uint64_t kGoneSlices = 20;

// When a slice between launches is expected back, and when it counts as late or gone.
struct Return {
  uint64_t back;     // expected next launch: end of its queue + its learnt gap
  uint64_t overdue;  // later than its pattern from then on
  uint64_t gone;     // no longer counted as having work from then on
};

Return ExpectedReturn(const ArbiterSlice& o) {
  uint64_t end = QueueEnd(o);
  uint64_t gap = o.idle_gap_ns;
  return {end + gap, end + Max(DemandGrace(o), 2 * gap),
          end + Max(kGoneSlices * TimeSlice(o), 4 * gap)};
}

}  // namespace

uint64_t TimeSlice(const ArbiterSlice& s) {
  uint64_t t = s.config.time_slice_ns;
  return t < kMinTimeSliceNs ? kDefaultTimeSliceNs : t;
}

uint64_t DemandGrace(const ArbiterSlice& s) { return Max(TimeSlice(s) / 10, kMinDemandGraceNs); }

bool InUse(const ArbiterSlice& s) { return s.key != 0 && s.members > 0; }

int Tier(const ArbiterSlice& s) {
  if (s.config.level == kPriorityRealtime) return 2;
  if (s.config.guarantee_pct > 0 && s.credit_g_ns > 0) return 1;
  return 0;
}

int Class(const ArbiterSlice& s) { return Tier(s) * 8 + (kPriorityLevels - s.config.level); }

bool CapOk(const ArbiterSlice& s) { return s.config.max_pct >= 100 || s.credit_m_ns > 0; }

bool Outranks(const ArbiterSlice& x, const ArbiterSlice& y) {
  int cx = Class(x), cy = Class(y);
  if (cx != cy) return cx > cy;
  // Both below their guarantees (the GPU cannot give every slice its guarantee, e.g. their own
  // launch latency leaves it idle between kernels): in proportion to the guarantees.
  if (Tier(x) == 1 && Tier(y) == 1 && x.gvtime != y.gvtime) return x.gvtime < y.gvtime;
  return x.vtime < y.vtime;
}

uint64_t QueueEnd(const ArbiterSlice& s) { return Max(s.busy_until_ns, s.last_launch_ns); }

uint64_t ClaimEnd(const ArbiterSlice& s) { return QueueEnd(s) + s.idle_gap_ns + DemandGrace(s); }

bool Claiming(const ArbiterSlice& s, uint64_t now) {
  return InUse(s) && s.kernels > 0 && now < ClaimEnd(s);
}

bool Pausing(const ArbiterSlice& s, uint64_t now) {
  return s.waiters <= 0 && (now >= QueueEnd(s) || now >= s.last_launch_ns + kPauseNs);
}

bool ClaimHolds(const Arbiter* a, int claimant, int waiter, uint64_t now, uint64_t estimate_ns) {
  const ArbiterSlice& o = a->slices[claimant];
  if (!Claiming(o, now)) return false;
  const bool dry = now >= QueueEnd(o);
  const bool pausing = Pausing(o, now);
  if (Outranks(a->slices[waiter], o) && (dry || (pausing && o.idle_gap_ns > 0))) return false;
  if (estimate_ns == 0 || !pausing) return true;
  // The waiter's launch would start at `start`; the claimant is expected back at `back`. Holding
  // the launch leaves the GPU idle until then; running it delays the claimant by its overhang.
  // It runs when the overhang is at most the idle time it saves.
  uint64_t start = Max(now, a->header.busy_until_ns);
  uint64_t back = QueueEnd(o) + o.idle_gap_ns;
  if (start >= back) return true;
  return start + estimate_ns > back + (back - start);
}

bool Held(const Arbiter* a, int index, uint64_t now, uint64_t estimate_ns, uint64_t* lapse) {
  const ArbiterSlice& s = a->slices[index];
  int tier = Tier(s);
  if (tier == 2) return false;
  const uint64_t gpu_free = a->header.busy_until_ns;
  const uint64_t start = Max(now, gpu_free);
  const uint64_t end = start + estimate_ns;
  // A launch without an estimate (its kernel never measured) may be long: it fits in no gap.
  const bool known = estimate_ns > 0;
  bool held = false;
  for (int t = 0; t < kMaxArbiterSlices; ++t) {
    const ArbiterSlice& o = a->slices[t];
    if (t == index || !InUse(o) || o.config.level >= s.config.level) continue;
    if (tier == 1 && o.config.level != kPriorityRealtime) continue;
    Return r = ExpectedReturn(o);
    uint64_t slack = static_cast<uint64_t>(o.config.latency_slack_us) * 1000;
    if (!CapOk(o)) {
      // Over its cap: it cannot launch before its max credit is positive again. A launch that
      // starts before then delays it by less than one kernel, time its credit makes up.
      uint64_t need = static_cast<uint64_t>(-o.credit_m_ns) + 1;
      uint64_t refill = now + need * 100 / o.config.max_pct + 1;
      if (o.waiters <= 0 && now >= r.gone) continue;
      uint64_t back = o.waiters > 0 ? refill : Max(refill, r.back);
      if (known && start < back + slack) continue;
      held = true;
      *lapse = Min(*lapse, Max(back, r.overdue));
      continue;
    }
    if (o.waiters > 0) {
      // It asks now: it gets the next turn, unless a slice more important than both holds it
      // (that one's own rule applies to this launch too: a launch that fits in its gap while
      // the other's does not may run).
      uint64_t ignored = UINT64_MAX;
      if (Held(a, t, now, static_cast<uint64_t>(o.next_estimate_us) * 1000, &ignored)) continue;
      held = true;
      *lapse = Min(*lapse, now + TimeSlice(o));
      continue;
    }
    // Between launches: the launch may run if it ends before the other is expected back (plus
    // the slack the other allows); once the other is later than its pattern, one kernel at a
    // time on an idle GPU; once it is gone, freely.
    if (now >= r.gone) continue;
    if (now >= r.overdue) {
      if (start <= now || end <= now + slack) continue;
      held = true;
      *lapse = Min(*lapse, Min(gpu_free, r.gone));
      continue;
    }
    // (A slice still launching a burst is not between launches yet.)
    if (known && end <= r.back + slack && Pausing(o, now)) continue;
    held = true;
    *lapse = Min(*lapse, r.overdue);
    if (!Pausing(o, now)) *lapse = Min(*lapse, o.last_launch_ns + kPauseNs);
  }
  return held;
}

bool Candidate(const Arbiter* a, int index, uint64_t now) {
  const ArbiterSlice& s = a->slices[index];
  if (!InUse(s) || !CapOk(s)) return false;
  if (s.waiters <= 0 && !Claiming(s, now)) return false;
  uint64_t ignored = UINT64_MAX;
  return !Held(a, index, now, static_cast<uint64_t>(s.next_estimate_us) * 1000, &ignored);
}

bool Eligible(const Arbiter* a, int index, uint64_t now) {
  return a->slices[index].waiters > 0 && Candidate(a, index, now);
}

namespace {

// True if the claim of `index` (no gate waiting) holds against every waiting candidate of its
// level.
bool HoldsAgainstWaiting(const Arbiter* a, int index, const bool* candidate, uint64_t now) {
  const ArbiterSlice& s = a->slices[index];
  for (int w = 0; w < kMaxArbiterSlices; ++w) {
    const ArbiterSlice& o = a->slices[w];
    if (w == index || !candidate[w] || o.waiters <= 0 || o.config.level != s.config.level) continue;
    if (!ClaimHolds(a, index, w, now, static_cast<uint64_t>(o.next_estimate_us) * 1000)) {
      return false;
    }
  }
  return true;
}

}  // namespace

int Best(const Arbiter* a, uint64_t now, int exclude) {
  bool candidate[kMaxArbiterSlices];
  int32_t waiting_level = -1;  // the least important level with a waiting candidate
  for (int i = 0; i < kMaxArbiterSlices; ++i) {
    candidate[i] = i != exclude && Candidate(a, i, now);
    const ArbiterSlice& s = a->slices[i];
    if (candidate[i] && s.waiters > 0 && s.config.level > waiting_level) {
      waiting_level = s.config.level;
    }
  }
  int best = -1;
  for (int i = 0; i < kMaxArbiterSlices; ++i) {
    if (!candidate[i]) continue;
    const ArbiterSlice& s = a->slices[i];
    // A claim (no gate waiting) holds against equals only: a less important slice that waits is
    // a candidate only if its launch fits before the claimant is back (Held).
    if (s.waiters <= 0 && s.config.level < waiting_level) continue;
    // And against a waiting equal only as ClaimHolds says.
    if (s.waiters <= 0 && !HoldsAgainstWaiting(a, i, candidate, now)) continue;
    if (best < 0 || Outranks(s, a->slices[best])) best = i;
  }
  return best;
}

bool HigherWaiting(const Arbiter* a, int index, uint64_t now) {
  int mine = Class(a->slices[index]);
  for (int i = 0; i < kMaxArbiterSlices; ++i) {
    if (i != index && a->slices[i].waiters > 0 && Class(a->slices[i]) > mine &&
        Eligible(a, i, now)) {
      return true;
    }
  }
  return false;
}

bool OtherWaiting(const Arbiter* a, int index, uint64_t now, bool* claiming) {
  bool waiting = false;
  *claiming = false;
  for (int i = 0; i < kMaxArbiterSlices; ++i) {
    const ArbiterSlice& s = a->slices[i];
    if (i == index || !InUse(s)) continue;
    if (s.waiters > 0) waiting = true;
    if (Claiming(s, now)) *claiming = true;
  }
  return waiting;
}

void LearnArrival(ArbiterSlice* s, uint64_t now, uint64_t estimate_ns) {
  if (s->kernels == 0) return;
  uint64_t end = QueueEnd(*s);
  if (now < end && now < s->last_launch_ns + Max(kFollowUpNs, estimate_ns / 2)) return;  // a burst
  // Asking with work still queued is a gap of 0 (the queue never ran dry).
  uint64_t x = now > end ? Min(now - end, kMaxIdleGapNs) : 0;
  uint64_t g = s->idle_gap_ns;
  if (x < g) {
    g = (g + x) / 2;  // follows shorter gaps quickly: predicting too late costs the slice
  } else {
    // Longer ones slowly, from 0: by at most a quarter plus 10 us a launch, so that neither a
    // first launch after a long pause nor one outlier predicts a long gap (10 ms takes about 25
    // launches).
    g += Min((x - g + 3) / 4, g / 4 + kGapStepNs);
  }
  StoreU64(s->idle_gap_ns, g);
  if (s->idle_gaps < UINT32_MAX) s->idle_gaps++;
}

}  // namespace vgpu::shm::internal
