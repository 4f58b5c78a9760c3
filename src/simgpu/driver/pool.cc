// Stream-ordered allocation and memory pools. A pool reserves device memory in 2 MiB chunks as
// its allocations need it and keeps freed memory reserved; at a synchronization (stream, event or
// context) it gives back what it holds above its release threshold, and cuMemPoolTrimTo gives
// back what is unused down to the requested size. So the device sees pool growth and trimming
// as a real driver shows them, with chunk granularity. Graph memory nodes use one such pool per
// device (cuDeviceGraphMemTrim trims it).
#include <sys/mman.h>

#include <algorithm>

#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

std::vector<Pool*>& AllPools() {
  static auto* pools = new std::vector<Pool*>;
  return *pools;
}

Pool* NewPoolLocked(int ordinal, bool graph) {
  auto* p = new Pool;
  p->device = ordinal;
  p->phys = D().visible[ordinal];
  p->graph_pool = graph;
  p->props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p->props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p->props.location.id = ordinal;
  AllPools().push_back(p);
  return p;
}

// Gives back reserved memory above max(used, keep), in whole chunks.
void TrimLocked(Pool* p, uint64_t keep) {
  uint64_t target = std::max(RoundUp(p->used, kGranularity), RoundUp(keep, kGranularity));
  if (target >= p->reserved) return;
  UnchargeLocked(p->phys, p->reserved - target);
  p->reserved = target;
}

Pool* AsPool(CUmemoryPool h) {
  auto* p = reinterpret_cast<Pool*>(h);
  if (p == nullptr || p->tag != Tag::kPool || p->destroyed) return nullptr;
  return p;
}

CUresult AllocAsync(CUdeviceptr* dptr, size_t bytes, Pool* pool, CUstream h, bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  Stream* s = nullptr;
  if (CUresult rc = ResolveStreamLocked(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->capture != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (pool == nullptr) {
    pool = D().current_pools[s->ctx->device];
    if (pool == nullptr) pool = DefaultPoolLocked(s->ctx->device);
  }
  CUresult rc = PoolAllocLocked(pool, bytes, dptr, AllocKind::kPool);
  if (rc == CUDA_SUCCESS) EnqueueInstantLocked(s);
  return rc;
}

CUresult FreeAsync(CUdeviceptr dptr, CUstream h, bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  Stream* s = nullptr;
  if (CUresult rc = ResolveStreamLocked(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->capture != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  auto it = D().allocations.find(static_cast<uintptr_t>(dptr));
  if (it == D().allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  Allocation* a = it->second;
  if (a->kind == AllocKind::kHost || a->kind == AllocKind::kVmm) return CUDA_ERROR_INVALID_VALUE;
  D().allocations.erase(it);
  FreeAllocationLocked(a);  // pool memory stays reserved; other memory is freed
  EnqueueInstantLocked(s);
  return CUDA_SUCCESS;
}

CUresult GetAttr(Pool* p, CUmemPool_attribute attr, void* value) {
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      *static_cast<int*>(value) = p->reuse_follow_event;
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      *static_cast<int*>(value) = p->reuse_opportunistic;
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int*>(value) = p->reuse_internal;
      break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *static_cast<cuuint64_t*>(value) = p->release_threshold;
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      *static_cast<cuuint64_t*>(value) = p->reserved;
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      *static_cast<cuuint64_t*>(value) = p->reserved_high;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      *static_cast<cuuint64_t*>(value) = p->used;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      *static_cast<cuuint64_t*>(value) = p->used_high;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult SetAttr(Pool* p, CUmemPool_attribute attr, void* value) {
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      p->reuse_follow_event = *static_cast<int*>(value);
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      p->reuse_opportunistic = *static_cast<int*>(value);
      break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      p->reuse_internal = *static_cast<int*>(value);
      break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      p->release_threshold = *static_cast<cuuint64_t*>(value);
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:  // may only be reset to 0
      if (*static_cast<cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
      p->reserved_high = p->reserved;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (*static_cast<cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
      p->used_high = p->used;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // namespace

Pool* DefaultPoolLocked(int ordinal) {
  Pool*& p = D().default_pools[ordinal];
  if (p == nullptr) p = NewPoolLocked(ordinal, false);
  return p;
}

Pool* GraphPoolLocked(int ordinal) {
  Pool*& p = D().graph_pools[ordinal];
  if (p == nullptr) p = NewPoolLocked(ordinal, true);
  return p;
}

CUresult PoolAllocLocked(Pool* pool, size_t bytes, CUdeviceptr* out, AllocKind kind) {
  uint64_t size = RoundUp(bytes, kAllocAlign);
  uint64_t need = pool->used + size;
  if (need > pool->reserved) {
    uint64_t grow = RoundUp(need - pool->reserved, kGranularity);
    if (!ChargeLocked(pool->phys, grow)) return CUDA_ERROR_OUT_OF_MEMORY;
    pool->reserved += grow;
  }
  Backing backing = AllocateBacking(bytes);
  if (backing.ptr == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  pool->used += size;
  pool->used_high = std::max(pool->used_high, pool->used);
  pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
  pool->outstanding++;
  auto* a = new Allocation;
  a->base = reinterpret_cast<uintptr_t>(backing.ptr);
  a->size = bytes;
  a->kind = kind;
  a->device = pool->device;
  a->phys = pool->phys;
  a->charged = size;  // the part of the pool's reservation it uses
  a->backing = backing;
  a->pool = pool;
  AddAllocationLocked(a);
  *out = static_cast<CUdeviceptr>(a->base);
  return CUDA_SUCCESS;
}

void PoolFreeLocked(Allocation* a) {
  Pool* p = a->pool;
  p->used -= std::min<uint64_t>(p->used, a->charged);
  p->outstanding--;
  if (a->kind == AllocKind::kGraph) {
    // Graph memory keeps its address (fixed by its alloc node) for the next launch.
    size_t len = RoundUp(a->size, 4096);
    madvise(reinterpret_cast<void*>(a->base), len, MADV_DONTNEED);
    mprotect(reinterpret_cast<void*>(a->base), len, PROT_NONE);
  }
  FreeBacking(&a->backing);
  delete a;
  if (p->destroyed) TrimLocked(p, 0);
}

void TrimPoolsOnSyncLocked(int ordinal) {
  for (Pool* p : AllPools()) {
    if (ordinal >= 0 && p->device != ordinal) continue;
    if (p->graph_pool) continue;  // graph memory is trimmed by cuDeviceGraphMemTrim only
    if (p->reserved > p->release_threshold) TrimLocked(p, p->release_threshold);
  }
}

}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  SIMGPU_GUARD({ return AllocAsync(dptr, bytesize, nullptr, hStream, false); });
}
SIMGPU_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  SIMGPU_GUARD({ return AllocAsync(dptr, bytesize, nullptr, hStream, true); });
}

static CUresult FromPool(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream,
                         bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  Pool* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    p = AsPool(pool);
  }
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return AllocAsync(dptr, bytesize, p, hStream, per_thread);
}
SIMGPU_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                            CUstream hStream) {
  SIMGPU_GUARD({ return FromPool(dptr, bytesize, pool, hStream, false); });
}
SIMGPU_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                 CUmemoryPool pool, CUstream hStream) {
  SIMGPU_GUARD({ return FromPool(dptr, bytesize, pool, hStream, true); });
}

SIMGPU_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  SIMGPU_GUARD({ return FreeAsync(dptr, hStream, false); });
}
SIMGPU_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  SIMGPU_GUARD({ return FreeAsync(dptr, hStream, true); });
}

SIMGPU_API CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (pool == nullptr || poolProps == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
      return CUDA_ERROR_NOT_SUPPORTED;  // host and NUMA pools are not simulated
    }
    if (poolProps->location.id < 0 ||
        poolProps->location.id >= static_cast<int>(D().visible.size())) {
      return CUDA_ERROR_INVALID_DEVICE;
    }
    std::lock_guard<std::mutex> lock(D().mu);
    Pool* p = NewPoolLocked(poolProps->location.id, false);
    p->props = *poolProps;
    *pool = reinterpret_cast<CUmemoryPool>(p);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    Pool* p = AsPool(pool);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    for (Pool* d : D().default_pools) {
      if (d == p) return CUDA_ERROR_INVALID_VALUE;  // default pools cannot be destroyed
    }
    for (Pool*& c : D().current_pools) {
      if (c == p) c = nullptr;
    }
    // Outstanding allocations stay valid; their memory returns when they are freed.
    p->destroyed = true;
    TrimLocked(p, 0);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    *pool_out = reinterpret_cast<CUmemoryPool>(DefaultPoolLocked(dev));
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    Pool* p = D().current_pools[dev];
    *pool = reinterpret_cast<CUmemoryPool>(p != nullptr ? p : DefaultPoolLocked(dev));
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    Pool* p = AsPool(pool);
    if (p == nullptr || p->device != dev) return CUDA_ERROR_INVALID_VALUE;
    D().current_pools[dev] = p;
    return CUDA_SUCCESS;
  });
}

static CUresult DeviceLocation(const CUmemLocation* location, CUmemAllocationType type) {
  if (location == nullptr || type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED;
  return CheckDevice(location->id);
}

SIMGPU_API CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool_out, CUmemLocation* location,
                                           CUmemAllocationType type) {
  SIMGPU_GUARD({
    if (CUresult rc = DeviceLocation(location, type); rc != CUDA_SUCCESS) return rc;
    return cuDeviceGetDefaultMemPool(pool_out, location->id);
  });
}
SIMGPU_API CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location,
                                    CUmemAllocationType type) {
  SIMGPU_GUARD({
    if (CUresult rc = DeviceLocation(location, type); rc != CUDA_SUCCESS) return rc;
    return cuDeviceGetMemPool(pool, location->id);
  });
}
SIMGPU_API CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type,
                                    CUmemoryPool pool) {
  SIMGPU_GUARD({
    if (CUresult rc = DeviceLocation(location, type); rc != CUDA_SUCCESS) return rc;
    return cuDeviceSetMemPool(location->id, pool);
  });
}

SIMGPU_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    Pool* p = AsPool(pool);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    TrimLocked(p, minBytesToKeep);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                          void* value) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    Pool* p = AsPool(pool);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return GetAttr(p, attr, value);
  });
}

SIMGPU_API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                          void* value) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    Pool* p = AsPool(pool);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return SetAttr(p, attr, value);
  });
}

SIMGPU_API CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map,
                                       size_t count) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (map == nullptr && count > 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    return AsPool(pool) == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool,
                                       CUmemLocation* location) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (flags == nullptr || location == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    Pool* p = AsPool(memPool);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    bool own = location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id == p->device;
    *flags = own ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceGraphMemTrim(CUdevice device) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    TrimLocked(GraphPoolLocked(device), 0);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                 void* value) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    Pool* p = GraphPoolLocked(device);
    auto* out = static_cast<cuuint64_t*>(value);
    switch (attr) {
      case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
        *out = p->used;
        break;
      case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
        *out = p->used_high;
        break;
      case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
        *out = p->reserved;
        break;
      case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
        *out = p->reserved_high;
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                 void* value) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
    if (value == nullptr || *static_cast<cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    Pool* p = GraphPoolLocked(device);
    if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) {
      p->used_high = p->used;
    } else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) {
      p->reserved_high = p->reserved;
    } else {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  });
}
