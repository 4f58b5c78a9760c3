// Events: a recorded event completes when its stream reaches it on the simulated timeline, so
// elapsed times measure simulated kernel durations (and waits for the shared device).
#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

Event* AsEvent(CUevent e) {
  auto* ev = reinterpret_cast<Event*>(e);
  if (ev == nullptr || ev->tag != Tag::kEvent) return nullptr;
  return ev;
}

CUresult Record(CUevent e, CUstream h, bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  Event* ev = AsEvent(e);
  if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Stream* s = nullptr;
  if (CUresult rc = ResolveStreamLocked(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->capture != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (s->ctx != ev->ctx) return CUDA_ERROR_INVALID_HANDLE;
  ev->time_ns = EnqueueInstantLocked(s);
  ev->recorded = true;
  return CUDA_SUCCESS;
}

CUresult Destroy(CUevent e) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  Event* ev = AsEvent(e);
  if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Recycler<Event>::Retire(ev);
  return CUDA_SUCCESS;
}

CUresult Elapsed(float* ms, CUevent start, CUevent end) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  Event* a = AsEvent(start);
  Event* b = AsEvent(end);
  if (a == nullptr || b == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t now = MonotonicNs();
  a->time_ns = Due(a->time_ns);
  b->time_ns = Due(b->time_ns);
  if (now < a->time_ns || now < b->time_ns) return CUDA_ERROR_NOT_READY;
  double diff = static_cast<double>(b->time_ns) - static_cast<double>(a->time_ns);
  *ms = static_cast<float>(diff / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  SIMGPU_GUARD({
    Context* ctx = nullptr;
    if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
    unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (phEvent == nullptr || (Flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::lock_guard<std::mutex> lock(D().mu);
    Event* ev = Recycler<Event>::Make();
    ev->ctx = ctx;
    ev->flags = Flags;
    *phEvent = reinterpret_cast<CUevent>(ev);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  SIMGPU_GUARD({ return Record(hEvent, hStream, false); });
}
SIMGPU_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  SIMGPU_GUARD({ return Record(hEvent, hStream, true); });
}
SIMGPU_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  (void)flags;
  SIMGPU_GUARD({ return Record(hEvent, hStream, false); });
}
SIMGPU_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                                unsigned int flags) {
  (void)flags;
  SIMGPU_GUARD({ return Record(hEvent, hStream, true); });
}

SIMGPU_API CUresult cuEventQuery(CUevent hEvent) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    Event* ev = AsEvent(hEvent);
    if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (!ev->recorded) return CUDA_SUCCESS;
    return MonotonicNs() >= Due(ev->time_ns) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  });
}

SIMGPU_API CUresult cuEventSynchronize(CUevent hEvent) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    uint64_t until = 0;
    int device = 0;
    {
      std::lock_guard<std::mutex> lock(D().mu);
      Event* ev = AsEvent(hEvent);
      if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
      if (!ev->recorded) return CUDA_SUCCESS;
      until = ev->time_ns;
      device = ev->ctx->device;
    }
    SleepUntil(until);
    std::lock_guard<std::mutex> lock(D().mu);
    TrimPoolsOnSyncLocked(device);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuEventDestroy_v2(CUevent hEvent) {
  SIMGPU_GUARD({ return Destroy(hEvent); });
}
SIMGPU_API CUresult cuEventDestroy(CUevent hEvent) {
  SIMGPU_GUARD({ return Destroy(hEvent); });
}

SIMGPU_API CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  SIMGPU_GUARD({ return Elapsed(pMilliseconds, hStart, hEnd); });
}
SIMGPU_API CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  SIMGPU_GUARD({ return Elapsed(pMilliseconds, hStart, hEnd); });
}

SIMGPU_API CUresult cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    Context* c = AsContext(hCtx);
    Event* ev = AsEvent(hEvent);
    if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    ev->time_ns = std::max(MonotonicNs(), Due(c->all_end_ns));
    ev->recorded = true;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxWaitEvent(CUcontext hCtx, CUevent hEvent) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    Context* c = AsContext(hCtx);
    Event* ev = AsEvent(hEvent);
    if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (!ev->recorded) return CUDA_SUCCESS;
    StreamAdvanceLocked(c->legacy, ev->time_ns);
    for (Stream* s : c->streams) StreamAdvanceLocked(s, ev->time_ns);
    return CUDA_SUCCESS;
  });
}
