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
    uint64_t until = std::min(k.end_ns, now_ns);
    AddBusy(dev.buckets, k.start_ns, until);
    if (k.process_slot < static_cast<uint32_t>(kMaxProcesses)) {
      const ProcessRecord& p = state->processes[k.process_slot];
      if (p.pid != 0 && p.generation == k.process_generation) {
        AddBusy(state->process_buckets[device][k.process_slot], k.start_ns, until);
      }
    }
    if (k.end_ns > now_ns) {
      k.start_ns = now_ns;  // the rest is counted later
      break;
    }
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
  t.start_ns = std::max({now_ns, ready_ns, dev.busy_until_ns});
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
  dev.busy_total_ns += duration_ns;
  ProcessRecord& p = state->processes[slot];
  p.kernels[device]++;
  p.busy_ns[device] += duration_ns;
  p.wait_ns[device] += t.start_ns - now_ns;
  return t;
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
