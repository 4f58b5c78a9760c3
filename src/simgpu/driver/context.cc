// Primary and created contexts, the per-thread context stack, limits and synchronization.
#include <algorithm>

#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

void InitLimits(Context* c) {
  c->limits[CU_LIMIT_STACK_SIZE] = 1024;
  c->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
  c->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
  c->limits[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
  c->limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
  c->limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 32;
  c->limits[CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0;
}

CUresult CreateContext(CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Driver& d = D();
  std::lock_guard<std::mutex> lock(d.mu);
  Context* c = Recycler<Context>::Make();
  c->device = dev;
  c->phys = d.visible[dev];
  c->flags = flags;
  c->id = d.next_id++;
  InitLimits(c);
  c->legacy = Recycler<Stream>::Make();
  c->legacy->kind = Stream::Kind::kLegacy;
  c->legacy->ctx = c;
  if (CUresult rc = ActivateContextLocked(c); rc != CUDA_SUCCESS) {
    Recycler<Stream>::Retire(c->legacy);
    Recycler<Context>::Retire(c);
    return rc;
  }
  ThreadContextStack().push_back(c);
  *pctx = reinterpret_cast<CUcontext>(c);
  return CUDA_SUCCESS;
}

void RemoveFromThisThread(Context* c) {
  std::vector<Context*>& stack = ThreadContextStack();
  stack.erase(std::remove(stack.begin(), stack.end(), c), stack.end());
}

CUresult PrimaryRelease(CUdevice dev) {
  if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  Driver& d = D();
  Context* c = d.primaries[dev];
  LocalStorage storage;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (c->retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (c->retains == 1) storage = TakeLocalStorageLocked(c);
  }
  RunLocalStorageDestructors(c, storage);
  std::lock_guard<std::mutex> lock(d.mu);
  if (c->retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--c->retains == 0) {
    ReleaseContextResourcesLocked(c);
    DeactivateContextLocked(c);
  }
  return CUDA_SUCCESS;
}

CUresult PrimaryReset(CUdevice dev) {
  if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  Driver& d = D();
  Context* c = d.primaries[dev];
  LocalStorage storage;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    storage = TakeLocalStorageLocked(c);
  }
  RunLocalStorageDestructors(c, storage);
  std::lock_guard<std::mutex> lock(d.mu);
  if (c->active) {
    ReleaseContextResourcesLocked(c);
    DeactivateContextLocked(c);
  }
  c->retains = 0;
  c->flags = 0;
  return CUDA_SUCCESS;
}

CUresult PrimarySetFlags(CUdevice dev, unsigned flags) {
  if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  D().primaries[dev]->flags = flags;
  return CUDA_SUCCESS;
}

}  // namespace

void ReleaseContextResourcesLocked(Context* ctx) {
  std::vector<uintptr_t> owned;
  for (auto& [base, a] : D().allocations) {
    if (a->ctx == ctx && a->kind != AllocKind::kVmm) owned.push_back(base);
  }
  for (uintptr_t base : owned) FreeAllocationLocked(RemoveAllocationLocked(base));
  ReleaseContextArraysLocked(ctx);
  for (Stream* s : ctx->streams) Recycler<Stream>::Retire(s);
  ctx->streams.clear();
  ctx->legacy->last_end_ns = 0;
  ctx->blocking_end_ns = 0;
  ctx->all_end_ns = 0;
}

LocalStorage TakeLocalStorageLocked(Context* ctx) {
  LocalStorage taken;
  taken.swap(ctx->local_storage);
  return taken;
}

void RunLocalStorageDestructors(Context* ctx, const LocalStorage& storage) {
  for (const auto& [key, v] : storage) {
    if (v.dtor != nullptr) v.dtor(reinterpret_cast<CUcontext>(ctx), key, v.value);
  }
}

CUresult SynchronizeContext(Context* ctx) {
  uint64_t until;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    until = ctx->all_end_ns;
  }
  SleepUntil(until);
  std::lock_guard<std::mutex> lock(D().mu);
  TrimPoolsOnSyncLocked(ctx->device);
  return CUDA_SUCCESS;
}

}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Driver& d = D();
    std::lock_guard<std::mutex> lock(d.mu);
    Context* c = d.primaries[dev];
    if (c->retains == 0) {
      InitLimits(c);
      if (CUresult rc = ActivateContextLocked(c); rc != CUDA_SUCCESS) return rc;
    }
    c->retains++;
    *pctx = reinterpret_cast<CUcontext>(c);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  SIMGPU_GUARD({ return PrimaryRelease(dev); });
}
SIMGPU_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  SIMGPU_GUARD({ return PrimaryRelease(dev); });
}
SIMGPU_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  SIMGPU_GUARD({ return PrimaryReset(dev); });
}
SIMGPU_API CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  SIMGPU_GUARD({ return PrimaryReset(dev); });
}
SIMGPU_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  SIMGPU_GUARD({ return PrimarySetFlags(dev, flags); });
}
SIMGPU_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  SIMGPU_GUARD({ return PrimarySetFlags(dev, flags); });
}

SIMGPU_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    *flags = D().primaries[dev]->flags;
    *active = D().primaries[dev]->active ? 1 : 0;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams,
                                   unsigned int flags, CUdevice dev) {
  SIMGPU_GUARD({
    if (ctxCreateParams != nullptr && ctxCreateParams->cigParams != nullptr) {
      return CUDA_ERROR_NOT_SUPPORTED;  // graphics interop contexts are not simulated
    }
    return CreateContext(pctx, flags, dev);
  });
}
SIMGPU_API CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                                   unsigned int flags, CUdevice dev) {
  (void)paramsArray;
  (void)numParams;
  SIMGPU_GUARD({ return CreateContext(pctx, flags, dev); });
}
SIMGPU_API CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  SIMGPU_GUARD({ return CreateContext(pctx, flags, dev); });
}
SIMGPU_API CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  SIMGPU_GUARD({ return CreateContext(pctx, flags, dev); });
}

static CUresult DestroyContext(CUcontext ctx) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  Driver& d = D();
  LocalStorage storage;
  Context* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    c = AsContext(ctx);
    if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (c->primary) return CUDA_ERROR_INVALID_CONTEXT;  // primaries are released, not destroyed
    storage = TakeLocalStorageLocked(c);
  }
  RunLocalStorageDestructors(c, storage);  // the context is still usable by the callbacks
  std::lock_guard<std::mutex> lock(d.mu);
  if (AsContext(ctx) != c) return CUDA_ERROR_INVALID_CONTEXT;  // destroyed meanwhile
  ReleaseContextResourcesLocked(c);
  DeactivateContextLocked(c);
  RemoveFromThisThread(c);
  Recycler<Stream>::Retire(c->legacy);
  Recycler<Context>::Retire(c);
  return CUDA_SUCCESS;
}
SIMGPU_API CUresult cuCtxDestroy_v2(CUcontext ctx) {
  SIMGPU_GUARD({ return DestroyContext(ctx); });
}
SIMGPU_API CUresult cuCtxDestroy(CUcontext ctx) {
  SIMGPU_GUARD({ return DestroyContext(ctx); });
}

// A context that may be made current: a live one, or a device's primary context even before it
// is retained (the CUDA runtime makes the primary context current first and retains it after).
static Context* AsCurrentable(CUcontext ctx) {
  auto* c = reinterpret_cast<Context*>(ctx);
  if (c != nullptr && c->tag == Tag::kContext && c->primary) return c;
  return AsContext(ctx);
}

static CUresult PushCurrent(CUcontext ctx) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  Context* c = AsCurrentable(ctx);
  if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  ThreadContextStack().push_back(c);
  return CUDA_SUCCESS;
}
SIMGPU_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  SIMGPU_GUARD({ return PushCurrent(ctx); });
}
SIMGPU_API CUresult cuCtxPushCurrent(CUcontext ctx) {
  SIMGPU_GUARD({ return PushCurrent(ctx); });
}

static CUresult PopCurrent(CUcontext* pctx) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::vector<Context*>& stack = ThreadContextStack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) *pctx = reinterpret_cast<CUcontext>(stack.back());
  stack.pop_back();
  return CUDA_SUCCESS;
}
SIMGPU_API CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  SIMGPU_GUARD({ return PopCurrent(pctx); });
}
SIMGPU_API CUresult cuCtxPopCurrent(CUcontext* pctx) {
  SIMGPU_GUARD({ return PopCurrent(pctx); });
}

SIMGPU_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::vector<Context*>& stack = ThreadContextStack();
    if (ctx == nullptr) {
      if (!stack.empty()) stack.pop_back();
      return CUDA_SUCCESS;
    }
    std::lock_guard<std::mutex> lock(D().mu);
    Context* c = AsCurrentable(ctx);
    if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (stack.empty()) {
      stack.push_back(c);
    } else {
      stack.back() = c;
    }
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxGetCurrent(CUcontext* pctx) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::vector<Context*>& stack = ThreadContextStack();
    *pctx = stack.empty() ? nullptr : reinterpret_cast<CUcontext>(stack.back());
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxGetDevice(CUdevice* device) {
  SIMGPU_GUARD({
    Context* c = nullptr;
    if (CUresult rc = CurrentContext(&c); rc != CUDA_SUCCESS) return rc;
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *device = c->device;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  SIMGPU_GUARD({
    if (ctx == nullptr) return cuCtxGetDevice(device);
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    Context* c = AsContext(ctx);
    if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *device = c->device;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxGetFlags(unsigned int* flags) {
  SIMGPU_GUARD({
    Context* c = nullptr;
    if (CUresult rc = CurrentContext(&c); rc != CUDA_SUCCESS) return rc;
    if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *flags = c->flags;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxSetFlags(unsigned int flags) {
  SIMGPU_GUARD({
    Context* c = nullptr;
    if (CUresult rc = CurrentContext(&c); rc != CUDA_SUCCESS) return rc;
    c->flags = flags;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxGetId(CUcontext ctx, unsigned long long* ctxId) {
  SIMGPU_GUARD({
    Context* c = nullptr;
    if (ctx == nullptr) {
      if (CUresult rc = CurrentContext(&c); rc != CUDA_SUCCESS) return rc;
    } else {
      c = AsContext(ctx);
      if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (ctxId == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *ctxId = c->id;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxSynchronize(void) {
  SIMGPU_GUARD({
    Context* c = nullptr;
    if (CUresult rc = CurrentContext(&c); rc != CUDA_SUCCESS) return rc;
    return SynchronizeContext(c);
  });
}

SIMGPU_API CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  SIMGPU_GUARD({
    if (ctx == nullptr) return cuCtxSynchronize();
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    Context* c = AsContext(ctx);
    if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    return SynchronizeContext(c);
  });
}

SIMGPU_API CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  SIMGPU_GUARD({
    Context* c = nullptr;
    if (CUresult rc = CurrentContext(&c); rc != CUDA_SUCCESS) return rc;
    if (limit < 0 || limit > CU_LIMIT_PERSISTING_L2_CACHE_SIZE) return CUDA_ERROR_UNSUPPORTED_LIMIT;
    c->limits[limit] = value;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  SIMGPU_GUARD({
    Context* c = nullptr;
    if (CUresult rc = CurrentContext(&c); rc != CUDA_SUCCESS) return rc;
    if (pvalue == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // No context here is a CIG (CUDA in graphics) context; the query-only limit says so.
    if (limit == CU_LIMIT_CIG_ENABLED) {
      *pvalue = 0;
      return CUDA_SUCCESS;
    }
    if (limit < 0 || limit > CU_LIMIT_PERSISTING_L2_CACHE_SIZE) return CUDA_ERROR_UNSUPPORTED_LIMIT;
    *pvalue = c->limits[limit];
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxGetCacheConfig(CUfunc_cache* pconfig) {
  SIMGPU_GUARD({
    Context* c = nullptr;
    if (CUresult rc = CurrentContext(&c); rc != CUDA_SUCCESS) return rc;
    if (pconfig == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pconfig = c->cache_config;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
  SIMGPU_GUARD({
    Context* c = nullptr;
    if (CUresult rc = CurrentContext(&c); rc != CUDA_SUCCESS) return rc;
    c->cache_config = config;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxGetSharedMemConfig(CUsharedconfig* pConfig) {
  Context* c = nullptr;
  if (CUresult rc = CurrentContext(&c); rc != CUDA_SUCCESS) return rc;
  if (pConfig == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pConfig = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
  return CUDA_SUCCESS;
}

SIMGPU_API CUresult cuCtxSetSharedMemConfig(CUsharedconfig config) {
  (void)config;
  Context* c = nullptr;
  return CurrentContext(&c);
}

SIMGPU_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (ctx != nullptr && AsContext(ctx) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *version = 3020;  // contexts made with the current (v2) API
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (leastPriority != nullptr) *leastPriority = 0;
    if (greatestPriority != nullptr) *greatestPriority = -5;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuCtxResetPersistingL2Cache(void) {
  Context* c = nullptr;
  return CurrentContext(&c);
}
