// Entry points of memcpy and memset, in their default-stream (_v2 and legacy 32-bit), per-thread
// (_ptds/_ptsz) and asynchronous forms.
//
// Timing: host-to-device and device-to-host copies take time on the device's host link (the copy
// engines of timeline.h: a FIFO per direction shared by all processes, the two directions
// coupled); device-to-device, peer and host-to-host copies and memsets take none. An asynchronous
// copy is queued in stream order; a synchronous one is queued on the (legacy or per-thread)
// default stream and returns when it ends, as the real ones do. The bytes move at once.
#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

CUDA_MEMCPY3D Linear(CUmemorytype dt, uintptr_t dst, CUmemorytype st, uintptr_t src, size_t n) {
  CUDA_MEMCPY3D c{};
  c.dstMemoryType = dt;
  c.srcMemoryType = st;
  if (dt == CU_MEMORYTYPE_HOST) {
    c.dstHost = reinterpret_cast<void*>(dst);
  } else {
    c.dstDevice = static_cast<CUdeviceptr>(dst);
  }
  if (st == CU_MEMORYTYPE_HOST) {
    c.srcHost = reinterpret_cast<const void*>(src);
  } else {
    c.srcDevice = static_cast<CUdeviceptr>(src);
  }
  c.WidthInBytes = n;
  c.Height = 1;
  c.Depth = 1;
  return c;
}

uintptr_t U(const void* p) { return reinterpret_cast<uintptr_t>(p); }

CUDA_MEMCPY3D HtoD(CUdeviceptr d, const void* s, size_t n) {
  return Linear(CU_MEMORYTYPE_DEVICE, d, CU_MEMORYTYPE_HOST, U(s), n);
}
CUDA_MEMCPY3D DtoH(void* d, CUdeviceptr s, size_t n) {
  return Linear(CU_MEMORYTYPE_HOST, U(d), CU_MEMORYTYPE_DEVICE, s, n);
}
CUDA_MEMCPY3D DtoD(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return Linear(CU_MEMORYTYPE_DEVICE, d, CU_MEMORYTYPE_DEVICE, s, n);
}
CUDA_MEMCPY3D Any(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return Linear(CU_MEMORYTYPE_UNIFIED, d, CU_MEMORYTYPE_UNIFIED, s, n);
}

// Array copies of the 1D entry points: `offset` bytes into the array's first row.
CUDA_MEMCPY3D ToArray(CUarray a, size_t offset, CUmemorytype st, uintptr_t src, size_t n) {
  CUDA_MEMCPY3D c = Linear(CU_MEMORYTYPE_DEVICE, 0, st, src, n);
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = a;
  c.dstXInBytes = offset;
  return c;
}
CUDA_MEMCPY3D FromArray(CUmemorytype dt, uintptr_t dst, CUarray a, size_t offset, size_t n) {
  CUDA_MEMCPY3D c = Linear(dt, dst, CU_MEMORYTYPE_DEVICE, 0, n);
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcArray = a;
  c.srcXInBytes = offset;
  return c;
}

template <typename Copy2D>
CUDA_MEMCPY3D From2D(const Copy2D& p) {
  CUDA_MEMCPY3D c{};
  c.srcXInBytes = p.srcXInBytes;
  c.srcY = p.srcY;
  c.srcMemoryType = p.srcMemoryType;
  c.srcHost = p.srcHost;
  c.srcDevice = p.srcDevice;
  c.srcArray = p.srcArray;
  c.srcPitch = p.srcPitch;
  c.dstXInBytes = p.dstXInBytes;
  c.dstY = p.dstY;
  c.dstMemoryType = p.dstMemoryType;
  c.dstHost = p.dstHost;
  c.dstDevice = p.dstDevice;
  c.dstArray = p.dstArray;
  c.dstPitch = p.dstPitch;
  c.WidthInBytes = p.WidthInBytes;
  c.Height = p.Height;
  c.Depth = 1;
  return c;
}

template <typename Copy3D>
CUDA_MEMCPY3D From3D(const Copy3D& p) {
  CUDA_MEMCPY3D c{};
  c.srcXInBytes = p.srcXInBytes;
  c.srcY = p.srcY;
  c.srcZ = p.srcZ;
  c.srcMemoryType = p.srcMemoryType;
  c.srcHost = p.srcHost;
  c.srcDevice = p.srcDevice;
  c.srcArray = p.srcArray;
  c.srcPitch = p.srcPitch;
  c.srcHeight = p.srcHeight;
  c.dstXInBytes = p.dstXInBytes;
  c.dstY = p.dstY;
  c.dstZ = p.dstZ;
  c.dstMemoryType = p.dstMemoryType;
  c.dstHost = p.dstHost;
  c.dstDevice = p.dstDevice;
  c.dstArray = p.dstArray;
  c.dstPitch = p.dstPitch;
  c.dstHeight = p.dstHeight;
  c.WidthInBytes = p.WidthInBytes;
  c.Height = p.Height;
  c.Depth = p.Depth;
  return c;
}

CUresult SyncCopy(const CUDA_MEMCPY3D& c, bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  uint64_t until;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    Stream* s = nullptr;
    if (CUresult rc = ResolveStreamLocked(nullptr, per_thread, &s); rc != CUDA_SUCCESS) return rc;
    if (CUresult rc = Copy3DLocked(c); rc != CUDA_SUCCESS) return rc;
    until = EnqueueCopyLocked(s, c);
  }
  SleepUntil(until);
  return CUDA_SUCCESS;
}

CUresult AsyncCopy(const CUDA_MEMCPY3D& c, CUstream h, bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  Stream* s = nullptr;
  if (CUresult rc = ResolveStreamLocked(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  CUresult rc = CUDA_SUCCESS;
  if (CaptureMemcpyLocked(s, c, &rc)) return rc;
  if (rc = Copy3DLocked(c); rc != CUDA_SUCCESS) return rc;
  EnqueueCopyLocked(s, c);
  return CUDA_SUCCESS;
}

CUresult Memset(CUdeviceptr dst, size_t pitch, unsigned value, unsigned elem, size_t width,
                size_t height, CUstream h, bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  Stream* s = nullptr;
  if (CUresult rc = ResolveStreamLocked(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  CUresult rc = CUDA_SUCCESS;
  CUDA_MEMSET_NODE_PARAMS p{dst, pitch, value, elem, width, height};
  if (CaptureMemsetLocked(s, p, &rc)) return rc;
  EnqueueInstantLocked(s);
  return MemsetLocked(static_cast<uintptr_t>(dst), pitch, value, elem, width, height);
}

}  // namespace
}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

// Synchronous copies: default stream, per-thread stream, legacy 32-bit.
#define SYNC3(name, ptds_name, legacy_name, params, legacy_params, copy) \
  SIMGPU_API CUresult name params {                                      \
    SIMGPU_GUARD({ return SyncCopy(copy, false); });                     \
  }                                                                      \
  SIMGPU_API CUresult ptds_name params {                                 \
    SIMGPU_GUARD({ return SyncCopy(copy, true); });                      \
  }                                                                      \
  SIMGPU_API CUresult legacy_name legacy_params {                        \
    SIMGPU_GUARD({ return SyncCopy(copy, false); });                     \
  }

SYNC3(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD, (CUdeviceptr d, const void* s, size_t n),
      (CUdeviceptr_v1 d, const void* s, unsigned int n), HtoD(d, s, n))
SYNC3(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, (void* d, CUdeviceptr s, size_t n),
      (void* d, CUdeviceptr_v1 s, unsigned int n), DtoH(d, s, n))
SYNC3(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD, (CUdeviceptr d, CUdeviceptr s, size_t n),
      (CUdeviceptr_v1 d, CUdeviceptr_v1 s, unsigned int n), DtoD(d, s, n))
SYNC3(cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds, cuMemcpyHtoA,
      (CUarray a, size_t o, const void* s, size_t n),
      (CUarray a, unsigned o, const void* s, unsigned n),
      ToArray(a, o, CU_MEMORYTYPE_HOST, U(s), n))
SYNC3(cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds, cuMemcpyAtoH, (void* d, CUarray a, size_t o, size_t n),
      (void* d, CUarray a, unsigned o, unsigned n), FromArray(CU_MEMORYTYPE_HOST, U(d), a, o, n))
SYNC3(cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds, cuMemcpyDtoA,
      (CUarray a, size_t o, CUdeviceptr s, size_t n),
      (CUarray a, unsigned o, CUdeviceptr_v1 s, unsigned n),
      ToArray(a, o, CU_MEMORYTYPE_DEVICE, s, n))
SYNC3(cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds, cuMemcpyAtoD,
      (CUdeviceptr d, CUarray a, size_t o, size_t n),
      (CUdeviceptr_v1 d, CUarray a, unsigned o, unsigned n),
      FromArray(CU_MEMORYTYPE_DEVICE, d, a, o, n))
SYNC3(cuMemcpy2D_v2, cuMemcpy2D_v2_ptds, cuMemcpy2D, (const CUDA_MEMCPY2D* p),
      (const CUDA_MEMCPY2D_v1* p), From2D(*p))
SYNC3(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned,
      (const CUDA_MEMCPY2D* p), (const CUDA_MEMCPY2D_v1* p), From2D(*p))
SYNC3(cuMemcpy3D_v2, cuMemcpy3D_v2_ptds, cuMemcpy3D, (const CUDA_MEMCPY3D* p),
      (const CUDA_MEMCPY3D_v1* p), From3D(*p))

static CUresult AtoA(CUarray d, size_t dof, CUarray s, size_t sof, size_t n, bool pt) {
  CUDA_MEMCPY3D c = FromArray(CU_MEMORYTYPE_HOST, 0, s, sof, n);
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = d;
  c.dstXInBytes = dof;
  return SyncCopy(c, pt);
}
SIMGPU_API CUresult cuMemcpyAtoA_v2(CUarray d, size_t dof, CUarray s, size_t sof, size_t n) {
  SIMGPU_GUARD({ return AtoA(d, dof, s, sof, n, false); });
}
SIMGPU_API CUresult cuMemcpyAtoA_v2_ptds(CUarray d, size_t dof, CUarray s, size_t sof, size_t n) {
  SIMGPU_GUARD({ return AtoA(d, dof, s, sof, n, true); });
}
SIMGPU_API CUresult cuMemcpyAtoA(CUarray d, unsigned dof, CUarray s, unsigned sof, unsigned n) {
  SIMGPU_GUARD({ return AtoA(d, dof, s, sof, n, false); });
}

SIMGPU_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  SIMGPU_GUARD({ return SyncCopy(Any(dst, src, n), false); });
}
SIMGPU_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  SIMGPU_GUARD({ return SyncCopy(Any(dst, src, n), true); });
}
SIMGPU_API CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc,
                                 size_t n) {
  (void)dc;
  (void)sc;
  SIMGPU_GUARD({ return SyncCopy(Any(d, s, n), false); });
}
SIMGPU_API CUresult cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc,
                                      size_t n) {
  (void)dc;
  (void)sc;
  SIMGPU_GUARD({ return SyncCopy(Any(d, s, n), true); });
}
SIMGPU_API CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* p) {
  SIMGPU_GUARD({ return p == nullptr ? CUDA_ERROR_INVALID_VALUE : SyncCopy(From3D(*p), false); });
}
SIMGPU_API CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER* p) {
  SIMGPU_GUARD({ return p == nullptr ? CUDA_ERROR_INVALID_VALUE : SyncCopy(From3D(*p), true); });
}

// Asynchronous copies: default stream (_v2 and legacy) and per-thread (_ptsz).
#define ASYNC3(name, ptsz_name, legacy_name, params, legacy_params, copy) \
  SIMGPU_API CUresult name params {                                       \
    SIMGPU_GUARD({ return AsyncCopy(copy, h, false); });                  \
  }                                                                       \
  SIMGPU_API CUresult ptsz_name params {                                  \
    SIMGPU_GUARD({ return AsyncCopy(copy, h, true); });                   \
  }                                                                       \
  SIMGPU_API CUresult legacy_name legacy_params {                         \
    SIMGPU_GUARD({ return AsyncCopy(copy, h, false); });                  \
  }

ASYNC3(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync,
       (CUdeviceptr d, const void* s, size_t n, CUstream h),
       (CUdeviceptr_v1 d, const void* s, unsigned int n, CUstream h), HtoD(d, s, n))
ASYNC3(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync,
       (void* d, CUdeviceptr s, size_t n, CUstream h),
       (void* d, CUdeviceptr_v1 s, unsigned int n, CUstream h), DtoH(d, s, n))
ASYNC3(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync,
       (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h),
       (CUdeviceptr_v1 d, CUdeviceptr_v1 s, unsigned int n, CUstream h), DtoD(d, s, n))
ASYNC3(cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz, cuMemcpyHtoAAsync,
       (CUarray a, size_t o, const void* s, size_t n, CUstream h),
       (CUarray a, unsigned o, const void* s, unsigned n, CUstream h),
       ToArray(a, o, CU_MEMORYTYPE_HOST, U(s), n))
ASYNC3(cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz, cuMemcpyAtoHAsync,
       (void* d, CUarray a, size_t o, size_t n, CUstream h),
       (void* d, CUarray a, unsigned o, unsigned n, CUstream h),
       FromArray(CU_MEMORYTYPE_HOST, U(d), a, o, n))
ASYNC3(cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync,
       (const CUDA_MEMCPY2D* p, CUstream h), (const CUDA_MEMCPY2D_v1* p, CUstream h), From2D(*p))
ASYNC3(cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync,
       (const CUDA_MEMCPY3D* p, CUstream h), (const CUDA_MEMCPY3D_v1* p, CUstream h), From3D(*p))

SIMGPU_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
  SIMGPU_GUARD({ return AsyncCopy(Any(dst, src, n), h, false); });
}
SIMGPU_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
  SIMGPU_GUARD({ return AsyncCopy(Any(dst, src, n), h, true); });
}
SIMGPU_API CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc,
                                      size_t n, CUstream h) {
  (void)dc;
  (void)sc;
  SIMGPU_GUARD({ return AsyncCopy(Any(d, s, n), h, false); });
}
SIMGPU_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc,
                                           size_t n, CUstream h) {
  (void)dc;
  (void)sc;
  SIMGPU_GUARD({ return AsyncCopy(Any(d, s, n), h, true); });
}
SIMGPU_API CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* p, CUstream h) {
  SIMGPU_GUARD(
      { return p == nullptr ? CUDA_ERROR_INVALID_VALUE : AsyncCopy(From3D(*p), h, false); });
}
SIMGPU_API CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER* p, CUstream h) {
  SIMGPU_GUARD(
      { return p == nullptr ? CUDA_ERROR_INVALID_VALUE : AsyncCopy(From3D(*p), h, true); });
}

// Memsets. Synchronous forms run on the default (or per-thread) stream without waiting.
#define MEMSET1(bits, elem, vtype)                                                                 \
  SIMGPU_API CUresult cuMemsetD##bits##_v2(CUdeviceptr d, vtype v, size_t n) {                     \
    SIMGPU_GUARD({ return Memset(d, 0, v, elem, n, 1, nullptr, false); });                         \
  }                                                                                                \
  SIMGPU_API CUresult cuMemsetD##bits##_v2_ptds(CUdeviceptr d, vtype v, size_t n) {                \
    SIMGPU_GUARD({ return Memset(d, 0, v, elem, n, 1, nullptr, true); });                          \
  }                                                                                                \
  SIMGPU_API CUresult cuMemsetD##bits(CUdeviceptr_v1 d, vtype v, unsigned int n) {                 \
    SIMGPU_GUARD({ return Memset(d, 0, v, elem, n, 1, nullptr, false); });                         \
  }                                                                                                \
  SIMGPU_API CUresult cuMemsetD##bits##Async(CUdeviceptr d, vtype v, size_t n, CUstream h) {       \
    SIMGPU_GUARD({ return Memset(d, 0, v, elem, n, 1, h, false); });                               \
  }                                                                                                \
  SIMGPU_API CUresult cuMemsetD##bits##Async_ptsz(CUdeviceptr d, vtype v, size_t n, CUstream h) {  \
    SIMGPU_GUARD({ return Memset(d, 0, v, elem, n, 1, h, true); });                                \
  }                                                                                                \
  SIMGPU_API CUresult cuMemsetD2D##bits##_v2(CUdeviceptr d, size_t p, vtype v, size_t w,           \
                                             size_t hgt) {                                         \
    SIMGPU_GUARD({ return Memset(d, p, v, elem, w, hgt, nullptr, false); });                       \
  }                                                                                                \
  SIMGPU_API CUresult cuMemsetD2D##bits##_v2_ptds(CUdeviceptr d, size_t p, vtype v, size_t w,      \
                                                  size_t hgt) {                                    \
    SIMGPU_GUARD({ return Memset(d, p, v, elem, w, hgt, nullptr, true); });                        \
  }                                                                                                \
  SIMGPU_API CUresult cuMemsetD2D##bits(CUdeviceptr_v1 d, unsigned int p, vtype v, unsigned int w, \
                                        unsigned int hgt) {                                        \
    SIMGPU_GUARD({ return Memset(d, p, v, elem, w, hgt, nullptr, false); });                       \
  }                                                                                                \
  SIMGPU_API CUresult cuMemsetD2D##bits##Async(CUdeviceptr d, size_t p, vtype v, size_t w,         \
                                               size_t hgt, CUstream h) {                           \
    SIMGPU_GUARD({ return Memset(d, p, v, elem, w, hgt, h, false); });                             \
  }                                                                                                \
  SIMGPU_API CUresult cuMemsetD2D##bits##Async_ptsz(CUdeviceptr d, size_t p, vtype v, size_t w,    \
                                                    size_t hgt, CUstream h) {                      \
    SIMGPU_GUARD({ return Memset(d, p, v, elem, w, hgt, h, true); });                              \
  }

MEMSET1(8, 1, unsigned char)
MEMSET1(16, 2, unsigned short)
MEMSET1(32, 4, unsigned int)
