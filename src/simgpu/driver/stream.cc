// Streams and their place on the device timeline.
//
// Every stream records when its queued work ends (last_end_ns). A kernel may start when its
// stream allows it (StreamReadyLocked) and the device is free (timeline.h). The legacy default
// stream (handle 0 in the default API, CU_STREAM_LEGACY) waits for all blocking streams of its
// context and they wait for it; non-blocking streams wait only for themselves; the per-thread
// default stream (_ptsz/_ptds variants, CU_STREAM_PER_THREAD) is a blocking stream of its own per
// thread and context. Synchronizing sleeps in real time until the simulated end time.
#include <errno.h>
#include <time.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "simgpu/driver/driver.h"
#include "simgpu/timeline.h"

namespace vgpu::simgpu::driver {
namespace {

Stream* PerThreadStreamLocked(Context* ctx) {
  thread_local std::vector<std::pair<Context*, Stream*>> streams;
  for (auto& [c, s] : streams) {
    if (c == ctx && s->tag == Tag::kStream) return s;
  }
  static auto* all_per_thread = new std::vector<Stream*>;  // they live as long as the process
  auto* s = new Stream;
  s->kind = Stream::Kind::kPerThread;
  s->ctx = ctx;
  s->id = D().next_id++;
  streams.emplace_back(ctx, s);
  all_per_thread->push_back(s);
  return s;
}

Stream* AsStreamLocked(CUstream h) {
  auto* s = reinterpret_cast<Stream*>(h);
  if (s->tag != Tag::kStream || !s->ctx->active) return nullptr;
  return s;
}

CUresult Resolve(CUstream h, bool per_thread, Stream** out) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  return ResolveStreamLocked(h, per_thread, out);
}

CUresult Synchronize(CUstream h, bool per_thread) {
  uint64_t until;
  int device;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    Stream* s = nullptr;
    if (CUresult rc = Resolve(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
    until = s->last_end_ns;
    device = s->ctx->device;
  }
  SleepUntil(until);
  std::lock_guard<std::mutex> lock(D().mu);
  TrimPoolsOnSyncLocked(device);
  return CUDA_SUCCESS;
}

CUresult Query(CUstream h, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  Stream* s = nullptr;
  if (CUresult rc = Resolve(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  return MonotonicNs() >= Due(s->last_end_ns) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult WaitEvent(CUstream h, CUevent e, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  Stream* s = nullptr;
  if (CUresult rc = Resolve(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  auto* ev = reinterpret_cast<Event*>(e);
  if (ev == nullptr || ev->tag != Tag::kEvent) return CUDA_ERROR_INVALID_HANDLE;
  if (ev->recorded) StreamAdvanceLocked(s, ev->time_ns);
  return CUDA_SUCCESS;
}

// Runs a host function once the stream reaches it, on a thread of its own.
CUresult HostFunc(CUstream h, CUhostFn fn, void* data, bool per_thread) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t at;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    Stream* s = nullptr;
    if (CUresult rc = Resolve(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
    at = EnqueueInstantLocked(s);
  }
  std::thread([at, fn, data] {
    SleepUntil(at);
    fn(data);
  }).detach();
  return CUDA_SUCCESS;
}

CUresult Callback(CUstream h, CUstreamCallback cb, void* data, unsigned flags, bool per_thread) {
  if (cb == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t at;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    Stream* s = nullptr;
    if (CUresult rc = Resolve(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
    at = EnqueueInstantLocked(s);
  }
  std::thread([at, cb, h, data] {
    SleepUntil(at);
    cb(h, CUDA_SUCCESS, data);
  }).detach();
  return CUDA_SUCCESS;
}

template <typename F>
CUresult WithStream(CUstream h, bool per_thread, F&& f) {
  std::lock_guard<std::mutex> lock(D().mu);
  Stream* s = nullptr;
  if (CUresult rc = Resolve(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  return f(s);
}

CUresult CreateStream(CUstream* ph, unsigned flags, int priority) {
  Context* ctx = nullptr;
  if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (ph == nullptr || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(D().mu);
  Stream* s = Recycler<Stream>::Make();
  s->ctx = ctx;
  s->flags = flags;
  s->priority = std::clamp(priority, -5, 0);
  s->id = D().next_id++;
  ctx->streams.push_back(s);
  *ph = reinterpret_cast<CUstream>(s);
  return CUDA_SUCCESS;
}

CUresult DestroyStream(CUstream h) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  Stream* s = AsStreamLocked(h);
  if (s == nullptr || s->kind != Stream::Kind::kUser) return CUDA_ERROR_INVALID_HANDLE;
  auto& list = s->ctx->streams;
  list.erase(std::remove(list.begin(), list.end(), s), list.end());
  Recycler<Stream>::Retire(s);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult ResolveStreamLocked(CUstream h, bool per_thread, Stream** out) {
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
    Context* ctx = nullptr;
    if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
    bool pt = h == CU_STREAM_PER_THREAD || (h == nullptr && per_thread);
    *out = pt ? PerThreadStreamLocked(ctx) : ctx->legacy;
    return CUDA_SUCCESS;
  }
  Stream* s = AsStreamLocked(h);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *out = s;
  return CUDA_SUCCESS;
}

uint64_t StreamReadyLocked(const Stream* s) {
  const Context* c = s->ctx;
  switch (s->kind) {
    case Stream::Kind::kLegacy:
      return std::max(Due(s->last_end_ns), Due(c->blocking_end_ns));
    case Stream::Kind::kPerThread:
      return std::max(Due(s->last_end_ns), Due(c->legacy->last_end_ns));
    case Stream::Kind::kUser:
      if (s->flags & CU_STREAM_NON_BLOCKING) return Due(s->last_end_ns);
      return std::max(Due(s->last_end_ns), Due(c->legacy->last_end_ns));
  }
  return Due(s->last_end_ns);
}

void StreamAdvanceLocked(Stream* s, uint64_t end_ns) {
  Context* c = s->ctx;
  end_ns = Due(end_ns);
  // Times of a cleared stuck episode are resolved first, so that max() compares real times.
  s->last_end_ns = std::max(Due(s->last_end_ns), end_ns);
  bool blocking = s->kind == Stream::Kind::kPerThread ||
                  (s->kind == Stream::Kind::kUser && !(s->flags & CU_STREAM_NON_BLOCKING));
  if (blocking) c->blocking_end_ns = std::max(Due(c->blocking_end_ns), end_ns);
  c->all_end_ns = std::max(Due(c->all_end_ns), end_ns);
}

uint64_t EnqueueInstantLocked(Stream* s) {
  uint64_t t = std::max(MonotonicNs(), StreamReadyLocked(s));
  StreamAdvanceLocked(s, t);
  return t;
}

namespace {

// Host or device side of a copy: host memory is CU_MEMORYTYPE_HOST, or a unified address that is
// pinned host memory or no allocation at all.
bool HostSideLocked(CUmemorytype type, const void* host, CUdeviceptr device) {
  if (type == CU_MEMORYTYPE_HOST) return true;
  if (type != CU_MEMORYTYPE_UNIFIED) return false;
  (void)host;
  const Allocation* a = FindAllocationLocked(static_cast<uintptr_t>(device));
  return a == nullptr || a->kind == AllocKind::kHost;
}

}  // namespace

uint64_t EnqueueCopyLocked(Stream* s, const CUDA_MEMCPY3D& c) {
  bool src_host = HostSideLocked(c.srcMemoryType, c.srcHost, c.srcDevice);
  bool dst_host = HostSideLocked(c.dstMemoryType, c.dstHost, c.dstDevice);
  if (src_host == dst_host) return EnqueueInstantLocked(s);
  Driver& d = D();
  const DeviceSpec& spec = d.config.devices[s->ctx->phys];
  CopyLink link;
  link.bytes_per_s[0] = spec.h2d_bytes_per_s;
  link.bytes_per_s[1] = spec.d2h_bytes_per_s;
  link.coupling_pct = spec.link_coupling_pct;
  uint64_t bytes = static_cast<uint64_t>(c.WidthInBytes) * (c.Height == 0 ? 1 : c.Height) *
                   (c.Depth == 0 ? 1 : c.Depth);
  CopyTiming t;
  {
    SharedState::Lock shared(d.state.get());
    t = EnqueueCopy(d.state->layout(), s->ctx->phys, MonotonicNs(), StreamReadyLocked(s), bytes,
                    src_host ? CopyDir::kHostToDevice : CopyDir::kDeviceToHost, link);
  }
  StreamAdvanceLocked(s, t.end_ns);
  return t.end_ns;
}

CUresult EnqueueKernelLocked(std::unique_lock<std::mutex>& lock, Stream* s, uint64_t duration_ns,
                             uint64_t* end_ns) {
  Driver& d = D();
  for (;;) {
    KernelTiming t;
    {
      SharedState::Lock shared(d.state.get());
      t = EnqueueKernel(d.state->layout(), s->ctx->phys, d.slot, MonotonicNs(),
                        StreamReadyLocked(s), duration_ns);
    }
    if (t.queued) {
      StreamAdvanceLocked(s, t.end_ns);
      if (end_ns != nullptr) *end_ns = t.end_ns;
      return CUDA_SUCCESS;
    }
    // The device queue is full, as a real GPU's launch queue can be: wait for room.
    lock.unlock();
    SleepUntil(t.retry_at_ns);
    lock.lock();
    if (s->tag != Tag::kStream) return CUDA_ERROR_INVALID_HANDLE;
  }
}

uint64_t Due(uint64_t t_ns) {
  if (t_ns < kStuckBase) return t_ns;
  Driver& d = D();
  return d.state ? ResolveTime(d.state->layout(), t_ns) : t_ns;
}

void SleepUntil(uint64_t t_ns) {
  // Behind a stuck kernel: poll until it is cleared and the time resolves.
  for (t_ns = Due(t_ns); t_ns >= kStuckBase; t_ns = Due(t_ns)) {
    timespec poll{0, 2'000'000};
    nanosleep(&poll, nullptr);
  }
  timespec ts{static_cast<time_t>(t_ns / 1'000'000'000ULL),
              static_cast<long>(t_ns % 1'000'000'000ULL)};
  while (MonotonicNs() < t_ns) {
    int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    if (rc != 0 && rc != EINTR) break;
  }
}

}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  SIMGPU_GUARD({ return CreateStream(phStream, Flags, 0); });
}
SIMGPU_API CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags,
                                               int priority) {
  SIMGPU_GUARD({ return CreateStream(phStream, flags, priority); });
}
SIMGPU_API CUresult cuStreamDestroy_v2(CUstream hStream) {
  SIMGPU_GUARD({ return DestroyStream(hStream); });
}
SIMGPU_API CUresult cuStreamDestroy(CUstream hStream) {
  SIMGPU_GUARD({ return DestroyStream(hStream); });
}

SIMGPU_API CUresult cuStreamSynchronize(CUstream hStream) {
  SIMGPU_GUARD({ return Synchronize(hStream, false); });
}
SIMGPU_API CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  SIMGPU_GUARD({ return Synchronize(hStream, true); });
}
SIMGPU_API CUresult cuStreamQuery(CUstream hStream) {
  SIMGPU_GUARD({ return Query(hStream, false); });
}
SIMGPU_API CUresult cuStreamQuery_ptsz(CUstream hStream) {
  SIMGPU_GUARD({ return Query(hStream, true); });
}
SIMGPU_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  (void)Flags;
  SIMGPU_GUARD({ return WaitEvent(hStream, hEvent, false); });
}
SIMGPU_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  (void)Flags;
  SIMGPU_GUARD({ return WaitEvent(hStream, hEvent, true); });
}
SIMGPU_API CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  SIMGPU_GUARD({ return HostFunc(hStream, fn, userData, false); });
}
SIMGPU_API CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData) {
  SIMGPU_GUARD({ return HostFunc(hStream, fn, userData, true); });
}
SIMGPU_API CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void* userData,
                                        unsigned int flags) {
  SIMGPU_GUARD({ return Callback(hStream, callback, userData, flags, false); });
}
SIMGPU_API CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
                                             void* userData, unsigned int flags) {
  SIMGPU_GUARD({ return Callback(hStream, callback, userData, flags, true); });
}

#define SIMGPU_STREAM_GETTER(name, type, expr)                 \
  static CUresult name##Impl(CUstream h, type* out, bool pt) { \
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;       \
    return WithStream(h, pt, [&](Stream* s) {                  \
      *out = (expr);                                           \
      return CUDA_SUCCESS;                                     \
    });                                                        \
  }                                                            \
  SIMGPU_API CUresult name(CUstream h, type* out) {            \
    SIMGPU_GUARD({ return name##Impl(h, out, false); });       \
  }                                                            \
  SIMGPU_API CUresult name##_ptsz(CUstream h, type* out) {     \
    SIMGPU_GUARD({ return name##Impl(h, out, true); });        \
  }

SIMGPU_STREAM_GETTER(cuStreamGetPriority, int, s->priority)
SIMGPU_STREAM_GETTER(cuStreamGetFlags, unsigned int, s->flags)
SIMGPU_STREAM_GETTER(cuStreamGetId, unsigned long long, s->id)
SIMGPU_STREAM_GETTER(cuStreamGetDevice, CUdevice, s->ctx->device)
SIMGPU_STREAM_GETTER(cuStreamGetCtx, CUcontext, reinterpret_cast<CUcontext>(s->ctx))

static CUresult GetCtxV2(CUstream h, CUcontext* pCtx, CUgreenCtx* pGreenCtx, bool pt) {
  if (pCtx == nullptr || pGreenCtx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return WithStream(h, pt, [&](Stream* s) {
    *pCtx = reinterpret_cast<CUcontext>(s->ctx);
    *pGreenCtx = nullptr;
    return CUDA_SUCCESS;
  });
}
SIMGPU_API CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  SIMGPU_GUARD({ return GetCtxV2(hStream, pCtx, pGreenCtx, false); });
}
SIMGPU_API CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext* pCtx,
                                           CUgreenCtx* pGreenCtx) {
  SIMGPU_GUARD({ return GetCtxV2(hStream, pCtx, pGreenCtx, true); });
}

// Stream attributes (access policy windows, priorities, ...) only steer performance on a real
// GPU: they are accepted and read back as zeros.
static CUresult GetAttribute(CUstream h, CUstreamAttrValue* value, bool pt) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return WithStream(h, pt, [&](Stream*) {
    *value = CUstreamAttrValue{};
    return CUDA_SUCCESS;
  });
}
SIMGPU_API CUresult cuStreamGetAttribute(CUstream hStream, CUstreamAttrID attr,
                                         CUstreamAttrValue* value_out) {
  (void)attr;
  SIMGPU_GUARD({ return GetAttribute(hStream, value_out, false); });
}
SIMGPU_API CUresult cuStreamGetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr,
                                              CUstreamAttrValue* value_out) {
  (void)attr;
  SIMGPU_GUARD({ return GetAttribute(hStream, value_out, true); });
}
SIMGPU_API CUresult cuStreamSetAttribute(CUstream hStream, CUstreamAttrID attr,
                                         const CUstreamAttrValue* value) {
  (void)attr;
  (void)value;
  SIMGPU_GUARD({ return WithStream(hStream, false, [](Stream*) { return CUDA_SUCCESS; }); });
}
SIMGPU_API CUresult cuStreamSetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr,
                                              const CUstreamAttrValue* value) {
  (void)attr;
  (void)value;
  SIMGPU_GUARD({ return WithStream(hStream, true, [](Stream*) { return CUDA_SUCCESS; }); });
}
SIMGPU_API CUresult cuStreamCopyAttributes(CUstream dst, CUstream src) {
  SIMGPU_GUARD({
    if (CUresult rc = WithStream(src, false, [](Stream*) { return CUDA_SUCCESS; }); rc) return rc;
    return WithStream(dst, false, [](Stream*) { return CUDA_SUCCESS; });
  });
}
SIMGPU_API CUresult cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src) {
  SIMGPU_GUARD({
    if (CUresult rc = WithStream(src, true, [](Stream*) { return CUDA_SUCCESS; }); rc) return rc;
    return WithStream(dst, true, [](Stream*) { return CUDA_SUCCESS; });
  });
}

SIMGPU_API CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length,
                                           unsigned int flags) {
  (void)dptr;
  (void)length;
  (void)flags;
  SIMGPU_GUARD({ return WithStream(hStream, false, [](Stream*) { return CUDA_SUCCESS; }); });
}
SIMGPU_API CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length,
                                                unsigned int flags) {
  (void)dptr;
  (void)length;
  (void)flags;
  SIMGPU_GUARD({ return WithStream(hStream, true, [](Stream*) { return CUDA_SUCCESS; }); });
}
