#include "simgpu/timeline.h"

#include <algorithm>

namespace vgpu::simgpu {
namespace {

constexpr uint64_t kHistoryNs = kUtilBuckets * kUtilBucketNs;

uint64_t RingBusy(const UtilBucket* ring, uint64_t settled_until, uint64_t from, uint64_t to) {
  if (to > settled_until) to = settled_until;
  if (to <= from) return 0;
  if (to - from > kHistoryNs) from = to - kHistoryNs;
  uint64_t total = 0;
  for (uint64_t idx = from / kUtilBucketNs; idx * kUtilBucketNs < to; ++idx) {
    const UtilBucket& b = ring[idx % kUtilBuckets];
    if (b.index != idx || b.busy_ns == 0) continue;
    uint64_t b_start = idx * kUtilBucketNs;
    // The bucket's data covers [b_start, data_end); spread its busy time evenly over that span.
    uint64_t data_end = std::min(b_start + kUtilBucketNs, settled_until);
    uint64_t lo = std::max(from, b_start);
    uint64_t hi = std::min(to, data_end);
    if (hi <= lo || data_end <= b_start) continue;
    uint64_t span = data_end - b_start;
    uint64_t busy = std::min(b.busy_ns, span);
    total += static_cast<uint64_t>(static_cast<unsigned __int128>(busy) * (hi - lo) / span);
  }
  return total;
}

}  // namespace

void AddBusy(UtilBucket* ring, uint64_t from_ns, uint64_t to_ns) {
  if (to_ns <= from_ns) return;
  if (to_ns - from_ns > kHistoryNs) from_ns = to_ns - kHistoryNs;
  for (uint64_t idx = from_ns / kUtilBucketNs; idx * kUtilBucketNs < to_ns; ++idx) {
    uint64_t lo = std::max(from_ns, idx * kUtilBucketNs);
    uint64_t hi = std::min(to_ns, (idx + 1) * kUtilBucketNs);
    UtilBucket& b = ring[idx % kUtilBuckets];
    if (b.index != idx) {
      b.index = idx;
      b.busy_ns = 0;
    }
    b.busy_ns += hi - lo;
  }
}

void Settle(SharedStateLayout* state, int device, uint64_t now_ns) {
  DeviceRecord& dev = state->devices[device];
  if (now_ns <= dev.settled_until_ns) return;
  while (dev.pending_head != dev.pending_tail) {
    PendingKernel& k = dev.pending[dev.pending_head % kPendingCapacity];
    if (k.start_ns >= now_ns) break;
    // Time before settled_until was counted by an earlier call (a kernel running then).
    uint64_t from = std::max(k.start_ns, dev.settled_until_ns);
    uint64_t until = std::min(k.end_ns, now_ns);
    AddBusy(dev.buckets, from, until);
    if (k.process_slot < static_cast<uint32_t>(kMaxProcesses)) {
      const ProcessRecord& p = state->processes[k.process_slot];
      if (p.pid != 0 && p.generation == k.process_generation) {
        AddBusy(state->process_buckets[device][k.process_slot], from, until);
      }
    }
    if (k.end_ns > now_ns) break;  // the rest is counted later
    dev.pending_head++;
  }
  dev.settled_until_ns = now_ns;
}

KernelTiming EnqueueKernel(SharedStateLayout* state, int device, int slot, uint64_t now_ns,
                           uint64_t ready_ns, uint64_t duration_ns) {
  DeviceRecord& dev = state->devices[device];
  Settle(state, device, now_ns);
  KernelTiming t;
  if (dev.pending_tail - dev.pending_head >= kPendingCapacity) {
    t.retry_at_ns = dev.pending[dev.pending_head % kPendingCapacity].end_ns;
    return t;
  }
  t.start_ns = std::max({now_ns, ResolveTime(state, ready_ns), dev.busy_until_ns});
  const uint64_t counted_ns = duration_ns;  // a stuck kernel counts as its own duration
  StuckState& stuck = state->stuck;
  const int32_t armed = stuck.armed_pid[device];
  if (armed != 0 && t.start_ns < kStuckBase && (armed < 0 || armed == state->processes[slot].pid)) {
    // This kernel sticks: it ends only when the episode is cleared.
    const uint64_t episode = ++stuck.episodes;
    stuck.armed_pid[device] = 0;
    stuck.active_episode[device] = episode;
    stuck.stuck_pid[device] = state->processes[slot].pid;
    stuck.stuck_since_ns[device] = t.start_ns;
    duration_ns = StuckEnd(episode) - t.start_ns;
  }
  t.end_ns = t.start_ns + duration_ns;
  t.queued = true;
  if (duration_ns > 0) {
    PendingKernel& k = dev.pending[dev.pending_tail % kPendingCapacity];
    k.start_ns = t.start_ns;
    k.end_ns = t.end_ns;
    k.process_slot = static_cast<uint32_t>(slot);
    k.process_generation = state->processes[slot].generation;
    dev.pending_tail++;  // publish after the entry is complete (crash safety)
  }
  dev.busy_until_ns = t.end_ns;
  dev.kernels_total++;
  dev.busy_total_ns += counted_ns;
  ProcessRecord& p = state->processes[slot];
  p.kernels[device]++;
  p.busy_ns[device] += counted_ns;
  p.wait_ns[device] += t.start_ns - now_ns;
  return t;
}

uint64_t CopyDuration(const CopyLink& link, CopyDir dir, uint64_t bytes, uint64_t start_ns,
                      uint64_t other_busy_until_ns) {
  uint64_t bw = link.bytes_per_s[static_cast<int>(dir)];
  if (bw == 0 || bytes == 0) return 0;
  auto time_at = [](uint64_t n, uint64_t rate) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(n) * 1'000'000'000ULL + rate - 1) /
                                 rate);
  };
  uint32_t pct = std::clamp<uint32_t>(link.coupling_pct, 1, 100);
  uint64_t slow_bw = std::max<uint64_t>(1, bw * pct / 100);
  if (pct == 100 || other_busy_until_ns <= start_ns) return time_at(bytes, bw);
  uint64_t overlap_ns = other_busy_until_ns - start_ns;
  auto overlap_bytes = static_cast<uint64_t>(std::min<unsigned __int128>(
      static_cast<unsigned __int128>(overlap_ns) * slow_bw / 1'000'000'000ULL, UINT64_MAX));
  if (bytes <= overlap_bytes) return time_at(bytes, slow_bw);
  return overlap_ns + time_at(bytes - overlap_bytes, bw);
}

CopyTiming EnqueueCopy(SharedStateLayout* state, int device, uint64_t now_ns, uint64_t ready_ns,
                       uint64_t bytes, CopyDir dir, const CopyLink& link) {
  DeviceRecord& dev = state->devices[device];
  int d = static_cast<int>(dir);
  CopyTiming t;
  if (link.bytes_per_s[d] == 0) {
    t.start_ns = t.end_ns = std::max(now_ns, ResolveTime(state, ready_ns));
  } else {
    t.start_ns = std::max({now_ns, ResolveTime(state, ready_ns), dev.copy_busy_until_ns[d]});
    t.end_ns =
        t.start_ns + CopyDuration(link, dir, bytes, t.start_ns, dev.copy_busy_until_ns[1 - d]);
    dev.copy_busy_until_ns[d] = t.end_ns;
  }
  dev.copy_bytes_total[d] += bytes;
  dev.copy_busy_total_ns[d] += t.end_ns - t.start_ns;
  return t;
}

uint64_t ResolveTime(const SharedStateLayout* state, uint64_t t) {
  if (t < kStuckBase) return t;
  const uint64_t episode = (t - kStuckBase) >> kStuckEpisodeShift;
  const StuckClear& c = state->stuck.cleared[episode % kStuckRing];
  if (__atomic_load_n(&c.episode, __ATOMIC_ACQUIRE) != episode) {
    // Not cleared yet, or so long ago that its slot was reused (then long over: resolve to 0+).
    return __atomic_load_n(&state->stuck.episodes, __ATOMIC_RELAXED) >= episode + kStuckRing
               ? t - StuckEnd(episode)
               : t;
  }
  return __atomic_load_n(&c.cleared_ns, __ATOMIC_RELAXED) + (t - StuckEnd(episode));
}

bool ArmStuckKernel(SharedStateLayout* state, int device, int32_t pid) {
  StuckState& s = state->stuck;
  if (s.active_episode[device] != 0) return false;
  s.armed_pid[device] = pid == 0 ? -1 : pid;
  return true;
}

bool ClearStuckKernel(SharedStateLayout* state, int device, uint64_t now_ns) {
  StuckState& s = state->stuck;
  const bool armed = s.armed_pid[device] != 0;
  s.armed_pid[device] = 0;
  const uint64_t episode = s.active_episode[device];
  if (episode == 0) return armed;
  Settle(state, device, now_ns);
  StuckClear& c = s.cleared[episode % kStuckRing];
  __atomic_store_n(&c.cleared_ns, now_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&c.episode, episode, __ATOMIC_RELEASE);
  s.active_episode[device] = 0;
  s.stuck_pid[device] = 0;
  s.stuck_since_ns[device] = 0;
  // Every time of the episode in the shared state now resolves to a real time.
  for (DeviceRecord& dev : state->devices) {
    dev.busy_until_ns = ResolveTime(state, dev.busy_until_ns);
    for (uint64_t& b : dev.copy_busy_until_ns) b = ResolveTime(state, b);
    for (uint64_t i = dev.pending_head; i != dev.pending_tail; ++i) {
      PendingKernel& k = dev.pending[i % kPendingCapacity];
      k.start_ns = ResolveTime(state, k.start_ns);
      k.end_ns = ResolveTime(state, k.end_ns);
    }
  }
  return true;
}

RunningKernel FindRunningKernel(const SharedStateLayout* state, int device, uint64_t now_ns) {
  const DeviceRecord& dev = state->devices[device];
  RunningKernel r;
  for (uint64_t i = dev.pending_head; i != dev.pending_tail; ++i) {
    const PendingKernel& k = dev.pending[i % kPendingCapacity];
    if (k.start_ns > now_ns) break;
    if (k.end_ns <= now_ns) continue;
    r.running = true;
    r.slot = static_cast<int>(k.process_slot);
    r.start_ns = k.start_ns;
    if (k.process_slot < static_cast<uint32_t>(kMaxProcesses)) {
      const ProcessRecord& p = state->processes[k.process_slot];
      if (p.generation == k.process_generation) r.pid = p.pid;
    }
    r.stuck = k.end_ns >= kStuckBase;
    break;
  }
  return r;
}

uint64_t BusyInWindow(const SharedStateLayout* state, int device, int slot, uint64_t from_ns,
                      uint64_t to_ns) {
  const DeviceRecord& dev = state->devices[device];
  const UtilBucket* ring = slot < 0 ? dev.buckets : state->process_buckets[device][slot];
  return RingBusy(ring, dev.settled_until_ns, from_ns, to_ns);
}

unsigned UtilizationPercent(SharedStateLayout* state, int device, int slot, uint64_t now_ns,
                            uint64_t window_ns) {
  Settle(state, device, now_ns);
  if (window_ns == 0) return 0;
  uint64_t from = now_ns > window_ns ? now_ns - window_ns : 0;
  uint64_t busy = BusyInWindow(state, device, slot, from, now_ns);
  uint64_t pct = (busy * 100 + (now_ns - from) / 2) / (now_ns - from);
  return static_cast<unsigned>(std::min<uint64_t>(pct, 100));
}

ProcessTimelineStats GetProcessTimelineStats(const SharedStateLayout* state, int device, int slot) {
  const ProcessRecord& p = state->processes[slot];
  return {p.busy_ns[device], p.wait_ns[device], p.kernels[device]};
}

}  // namespace vgpu::simgpu
