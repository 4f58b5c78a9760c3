// The compute gate's completion tracking: per-context event pools, the reference event that maps
// event times to the host clock, and the measurement of completed launches (see gate.h).
#include <time.h>

#include <cstring>

#include "common/log.h"
#include "intercept/gate/gate_internal.h"
#include "intercept/runtime.h"
#include "intercept/telemetry.h"
#include "shm/arbiter_policy.h"

namespace vgpu::intercept::gate {
namespace {

constexpr unsigned kStreamNonBlocking = 0x1;  // CU_STREAM_NON_BLOCKING

// Records the reference event on the private (idle) stream and waits for it; accepts it when the
// round trip is tight. Returns false when no reference could be taken.
bool TakeReference(ContextGate* cg, bool must) {
  for (int attempt = 0; attempt < (must ? 20 : 1); ++attempt) {
    uint64_t before = NowNs();
    if (g_cuda.cuEventRecord(cg->ref_event, cg->private_stream) != CUDA_SUCCESS) return false;
    uint64_t after_record = NowNs();
    CUresult q;
    uint64_t done;
    for (;;) {
      q = g_cuda.cuEventQuery(cg->ref_event);
      done = NowNs();
      if (q != CUDA_ERROR_NOT_READY || done - before > 1000ULL * 1000) break;
    }
    if (q == CUDA_ERROR_NOT_READY) q = g_cuda.cuEventSynchronize(cg->ref_event);
    if (q != CUDA_SUCCESS) return false;
    done = NowNs();
    // The event's device time lies between the record call and the observed completion.
    uint64_t error = (done - before) / 2;
    if (error <= kRefTightNs || attempt + 1 == (must ? 20 : 1)) {
      if (!must && error > kRefTightNs) return false;  // keep the old reference
      cg->ref_host_ns = (before + (after_record < done ? after_record : done)) / 2;
      cg->ref_error_ns = error;
      cg->ref_taken_ns = done;
      return true;
    }
  }
  return false;
}

void Release(ContextGate* cg, CUevent ev) {
  if (cg->pool_count < kRingSize) {
    cg->pool[cg->pool_count++] = ev;
  } else if (g_cuda.cuEventDestroy_v2 != nullptr) {
    g_cuda.cuEventDestroy_v2(ev);
  }
}

}  // namespace

uint64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

RelaxedCapture::RelaxedCapture() : saved_(0), active_(false) {
  if (g_cuda.cuThreadExchangeStreamCaptureMode == nullptr) return;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (g_cuda.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS) {
    saved_ = mode;
    active_ = true;
  }
}

RelaxedCapture::~RelaxedCapture() {
  if (!active_) return;
  CUstreamCaptureMode mode = static_cast<CUstreamCaptureMode>(saved_);
  g_cuda.cuThreadExchangeStreamCaptureMode(&mode);
}

ContextGate* ContextFor(CUcontext context, int device) {
  State& s = S();
  ContextGate* free_cg = nullptr;
  for (ContextGate& cg : s.contexts) {
    if (cg.context == context) {
      if (cg.broken) return nullptr;
      if (NowNs() - cg.ref_taken_ns > kRefRefreshNs) {
        RelaxedCapture relaxed;
        TakeReference(&cg, false);
      }
      return &cg;
    }
    if (cg.context == nullptr && free_cg == nullptr) free_cg = &cg;
  }
  if (free_cg == nullptr) return nullptr;
  RelaxedCapture relaxed;
  ContextGate& cg = *free_cg;
  cg.context = context;
  cg.device = device;
  cg.broken = true;
  cg.pool_count = 0;
  cg.head = cg.tail = 0;
  cg.unmeasured_inflight = 0;
  cg.learn_head = cg.learn_tail = 0;
  if (g_cuda.cuEventCreate == nullptr || g_cuda.cuEventRecord == nullptr ||
      g_cuda.cuEventQuery == nullptr || g_cuda.cuEventElapsedTime == nullptr ||
      g_cuda.cuStreamCreate == nullptr || g_cuda.cuEventSynchronize == nullptr) {
    VGPU_LOG_WARN("the driver lacks event functions: compute sharing is off in this process");
    return nullptr;
  }
  if (g_cuda.cuStreamCreate(&cg.private_stream, kStreamNonBlocking) != CUDA_SUCCESS ||
      g_cuda.cuEventCreate(&cg.ref_event, 0) != CUDA_SUCCESS || !TakeReference(&cg, true)) {
    VGPU_LOG_WARN("cannot set up launch tracking on device %d: its launches are not gated", device);
    return nullptr;
  }
  cg.broken = false;
  return &cg;
}

bool RingFull(const ContextGate* cg) { return cg->tail - cg->head >= kRingSize; }

CUevent OldestEvent(const ContextGate* cg) { return cg->ring[cg->head % kRingSize].event; }

CUevent OldestUnmeasured(const ContextGate* cg) {
  if (cg->unmeasured_inflight == 0) return nullptr;
  for (uint32_t i = cg->head; i != cg->tail; ++i) {
    const Inflight& e = cg->ring[i % kRingSize];
    if (!e.known) return e.event;
  }
  return nullptr;
}

void TrackLocked(ContextGate* cg, const LaunchSite& site, const Inflight& entry) {
  RelaxedCapture relaxed;
  CUevent ev = nullptr;
  if (cg->pool_count > 0) {
    ev = cg->pool[--cg->pool_count];
  } else if (g_cuda.cuEventCreate(&ev, 0) != CUDA_SUCCESS) {
    return;  // the estimate stays charged, uncorrected
  }
  CUresult rc = site.per_thread && g_cuda.cuEventRecord_ptsz != nullptr
                    ? g_cuda.cuEventRecord_ptsz(ev, site.stream)
                    : g_cuda.cuEventRecord(ev, site.stream);
  if (rc != CUDA_SUCCESS) {
    Release(cg, ev);
    return;
  }
  Inflight& slot = cg->ring[cg->tail % kRingSize];
  slot = entry;
  slot.event = ev;
  ++cg->tail;
  if (!entry.known) ++cg->unmeasured_inflight;
}

void PollLocked(ContextGate* cg) {
  State& s = S();
  if (cg->head != cg->tail) {
    RelaxedCapture relaxed;
    constexpr int kBatch = 64;
    uint64_t seqs[kBatch], ends[kBatch];
    int n = 0;
    int device = cg->device;
    while (cg->head != cg->tail && n < kBatch) {
      Inflight& e = cg->ring[cg->head % kRingSize];
      CUresult q = g_cuda.cuEventQuery(e.event);
      if (q == CUDA_ERROR_NOT_READY) break;
      float ms = 0;
      if (q == CUDA_SUCCESS &&
          g_cuda.cuEventElapsedTime(&ms, cg->ref_event, e.event) == CUDA_SUCCESS) {
        double end = static_cast<double>(cg->ref_host_ns) + static_cast<double>(ms) * 1e6;
        seqs[n] = e.seq;
        ends[n] = end < 0 ? 0 : static_cast<uint64_t>(end);
        ++n;
        if (cg->learn_tail - cg->learn_head >= kLearnSize) ++cg->learn_head;  // forget the oldest
        cg->learn[cg->learn_tail++ % kLearnSize] = Learning{e.seq, e.key, e.family, e.device};
      }
      s.stats.completed++;
      if (!e.known && cg->unmeasured_inflight > 0) --cg->unmeasured_inflight;
      Release(cg, e.event);
      ++cg->head;
    }
    DeviceGate& dg = s.devices[device];
    if (n > 0 && dg.arbiter != nullptr) {
      shm::ReportEnds(dg.arbiter, dg.slice, dg.proc, seqs, ends, n, s.identity, NowNs());
    }
  }
  // Learn the device times the arbiter has measured, in order (a later one waits for the earlier).
  while (cg->learn_head != cg->learn_tail) {
    const Learning& l = cg->learn[cg->learn_head % kLearnSize];
    DeviceGate& dg = s.devices[l.device];
    uint64_t duration = 0;
    if (dg.arbiter == nullptr) {
      ++cg->learn_head;
      continue;
    }
    if (!shm::LaunchDuration(dg.arbiter, l.seq, &duration)) {
      // Not yet measured (its predecessor's process has not reported); give up on it once the
      // GPU has moved well past it.
      uint64_t next = std::atomic_ref<uint64_t>(dg.arbiter->header.next_seq).load();
      if (next > l.seq + 256) {
        ++cg->learn_head;
        continue;
      }
      break;
    }
    s.estimates.Update(l.key, l.family, duration);
    s.stats.measured++;
    s.stats.measured_ns += duration;
    CountAdd(Counters()->busy_ns, duration);
    ++cg->learn_head;
  }
}

}  // namespace vgpu::intercept::gate
