// Hooks for stream-ordered allocation (cuMemAllocAsync, cuMemAllocFromPoolAsync,
// cuMemFreeAsync, with their per-thread-stream variants), pool life cycle (cuMemPoolCreate,
// cuMemPoolDestroy, cuMemPoolTrimTo) and the synchronizations at which the driver releases pool
// memory above each pool's release threshold (cuStreamSynchronize, cuEventSynchronize,
// cuCtxSynchronize). Accounting per pool: see pool_tracker.h.
//
// During stream capture an async allocation only records a graph node; it is charged when the
// graph is instantiated (hook_graph.cc), so captured calls pass through uncharged, and a free
// captured into a graph keeps its charge until the process exits (never released early).
#include "intercept/gate/gate.h"
#include "intercept/hooks/hook_util.h"

namespace vgpu::intercept {
namespace {

bool Capturing(CUstream stream, bool per_thread) {
  auto query = per_thread ? g_cuda.cuStreamIsCapturing_ptsz : g_cuda.cuStreamIsCapturing;
  if (query == nullptr) query = g_cuda.cuStreamIsCapturing;
  if (query == nullptr) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return query(stream, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// The tracker index of `pool`, registering it on `device` when it is new (a device's default or
// current pool, which cuMemPoolCreate never saw).
int PoolIndex(CUmemoryPool pool, int device) {
  PoolTracker& pools = GetRuntime().pools;
  int index = pools.Find(pool);
  if (index < 0) index = pools.Register(pool, device, true);
  return index;
}

using AllocFn = CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);

// Shared body of the four allocation hooks. `pool` null: the current pool of the device.
CUresult PoolAlloc(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream stream,
                   bool per_thread,
                   CUresult (*call)(void*, CUdeviceptr*, size_t, CUmemoryPool, CUstream),
                   void* real) {
  DeviceContext dc;
  if (dptr == nullptr || bytesize == 0 || !CurrentDeviceContext(&dc) ||
      Capturing(stream, per_thread)) {
    return call(real, dptr, bytesize, pool, stream);
  }
  Runtime& rt = GetRuntime();
  CUmemoryPool effective = pool;
  if (effective == nullptr && g_cuda.cuDeviceGetMemPool != nullptr) {
    if (g_cuda.cuDeviceGetMemPool(&effective, dc.device) != CUDA_SUCCESS) effective = nullptr;
  }
  int index = effective != nullptr ? PoolIndex(effective, dc.device) : -1;
  int device = dc.device;
  bool device_memory = true;
  if (index >= 0) rt.pools.Describe(index, &device, &device_memory);
  if (index < 0) {
    // Untracked pool (table full or no pool query): charge the allocation itself.
    if (!ChargeOrRefuse(device, bytesize, "cuMemAllocAsync")) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = call(real, dptr, bytesize, pool, stream);
    if (r != CUDA_SUCCESS) {
      rt.accountant.Uncharge(device, bytesize);
      return r;
    }
    Track(*dptr, Space::kPointer, device, dc.context, bytesize);
    return r;
  }
  if (!rt.pools.PrepareAlloc(index, bytesize)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = call(real, dptr, bytesize, pool, stream);
  if (r != CUDA_SUCCESS) {
    rt.pools.AbortAlloc(index, bytesize);
    return r;
  }
  rt.pools.CommitAlloc(index, bytesize);
  Track(*dptr, Space::kPointer, device, dc.context, bytesize, index);
  return r;
}

CUresult CallAllocAsync(void* real, CUdeviceptr* dptr, size_t bytesize, CUmemoryPool,
                        CUstream stream) {
  return reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t, CUstream)>(real)(dptr, bytesize,
                                                                              stream);
}

CUresult CallAllocFromPool(void* real, CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                           CUstream stream) {
  return reinterpret_cast<AllocFn>(real)(dptr, bytesize, pool, stream);
}

CUresult FreeAsync(CUresult (*real)(CUdeviceptr, CUstream), CUdeviceptr dptr, CUstream stream,
                   bool per_thread) {
  if (Capturing(stream, per_thread)) return real(dptr, stream);
  AllocTable& table = GetRuntime().table;
  AllocEntry entry;
  bool known = dptr != 0 && table.Remove(dptr, Space::kPointer, &entry);
  CUresult r = real(dptr, stream);
  if (known) {
    if (r == CUDA_SUCCESS) {
      ReleaseEntry(entry);
    } else {
      table.Insert(entry);
    }
  }
  return r;
}

}  // namespace

extern "C" CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuMemAllocAsync == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return PoolAlloc(dptr, bytesize, nullptr, stream, false, CallAllocAsync,
                   reinterpret_cast<void*>(g_cuda.cuMemAllocAsync));
}

extern "C" CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                         CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuMemAllocAsync_ptsz == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return PoolAlloc(dptr, bytesize, nullptr, stream, true, CallAllocAsync,
                   reinterpret_cast<void*>(g_cuda.cuMemAllocAsync_ptsz));
}

extern "C" CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                            CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuMemAllocFromPoolAsync == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (pool == nullptr) return g_cuda.cuMemAllocFromPoolAsync(dptr, bytesize, pool, stream);
  return PoolAlloc(dptr, bytesize, pool, stream, false, CallAllocFromPool,
                   reinterpret_cast<void*>(g_cuda.cuMemAllocFromPoolAsync));
}

extern "C" CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                 CUmemoryPool pool, CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuMemAllocFromPoolAsync_ptsz == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (pool == nullptr) return g_cuda.cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, stream);
  return PoolAlloc(dptr, bytesize, pool, stream, true, CallAllocFromPool,
                   reinterpret_cast<void*>(g_cuda.cuMemAllocFromPoolAsync_ptsz));
}

extern "C" CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuMemFreeAsync == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return FreeAsync(g_cuda.cuMemFreeAsync, dptr, stream, false);
}

extern "C" CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuMemFreeAsync_ptsz == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return FreeAsync(g_cuda.cuMemFreeAsync_ptsz, dptr, stream, true);
}

extern "C" CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemPoolCreate;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = real(pool, props);
  if (r != CUDA_SUCCESS || pool == nullptr || props == nullptr) return r;
  int device = -1;
  bool device_memory = false;
  if (props->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    device = props->location.id;
    device_memory = true;
  } else if (props->location.type == CU_MEM_LOCATION_TYPE_INVALID &&
             props->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED) {
    // A managed pool without a preferred location: counted on the current device.
    DeviceContext dc;
    if (CurrentDeviceContext(&dc)) {
      device = dc.device;
      device_memory = true;
    }
  }
  GetRuntime().pools.Register(*pool, device, device_memory);
  return r;
}

extern "C" CUresult cuMemPoolDestroy(CUmemoryPool pool) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemPoolDestroy;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = real(pool);
  if (r == CUDA_SUCCESS) GetRuntime().pools.OnDestroy(pool);
  return r;
}

extern "C" CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t min_bytes_to_keep) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemPoolTrimTo;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = real(pool, min_bytes_to_keep);
  if (r == CUDA_SUCCESS) {
    PoolTracker& pools = GetRuntime().pools;
    pools.Reconcile(pools.Find(pool));
  }
  return r;
}

// The synchronizations: the driver call, then the pools' release (pool_tracker.h); after a
// context synchronization the compute gate measures the context's ended launches (gate.h).
extern "C" CUresult cuStreamSynchronize(CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuStreamSynchronize == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = g_cuda.cuStreamSynchronize(stream);
  GetRuntime().pools.OnSynchronize();
  return r;
}

extern "C" CUresult cuStreamSynchronize_ptsz(CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuStreamSynchronize_ptsz == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = g_cuda.cuStreamSynchronize_ptsz(stream);
  GetRuntime().pools.OnSynchronize();
  return r;
}

extern "C" CUresult cuEventSynchronize(CUevent event) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuEventSynchronize == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = g_cuda.cuEventSynchronize(event);
  GetRuntime().pools.OnSynchronize();
  return r;
}

extern "C" CUresult cuCtxSynchronize() noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuCtxSynchronize == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = g_cuda.cuCtxSynchronize();
  GetRuntime().pools.OnSynchronize();
  if (r == CUDA_SUCCESS && g_compute_limited.load(std::memory_order_relaxed)) {
    GateAfterSynchronize();
  }
  return r;
}

extern "C" CUresult cuCtxSynchronize_v2(CUcontext ctx) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuCtxSynchronize_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = g_cuda.cuCtxSynchronize_v2(ctx);
  GetRuntime().pools.OnSynchronize();
  if (r == CUDA_SUCCESS && g_compute_limited.load(std::memory_order_relaxed)) {
    GateAfterSynchronize();
  }
  return r;
}

}  // namespace vgpu::intercept
