// Linear device memory (cuMemAlloc, pitched, managed), page-locked host memory, memory info,
// address ranges and pointer attributes.
#include <algorithm>
#include <cstring>

#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

// A new allocation of `ctx` over `backing` (caller holds D().mu; the caller adds it).
Allocation* NewContextAllocation(Context* ctx, const Backing& backing, size_t bytes,
                                 AllocKind kind) {
  auto* a = new Allocation;
  a->base = reinterpret_cast<uintptr_t>(backing.ptr);
  a->size = bytes;
  a->kind = kind;
  a->ctx = ctx;
  a->device = ctx->device;
  a->phys = ctx->phys;
  a->backing = backing;
  return a;
}

CUresult AllocDevice(CUdeviceptr* dptr, size_t bytes, AllocKind kind, bool low32 = false) {
  Context* ctx = nullptr;
  if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t charge = RoundUp(bytes, kAllocAlign);
  std::lock_guard<std::mutex> lock(D().mu);
  if (!ChargeLocked(ctx->phys, charge)) return CUDA_ERROR_OUT_OF_MEMORY;
  Backing backing = AllocateBacking(bytes, low32);
  if (backing.ptr == nullptr) {
    UnchargeLocked(ctx->phys, charge);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation* a = NewContextAllocation(ctx, backing, bytes, kind);
  a->charged = charge;
  AddAllocationLocked(a);
  *dptr = static_cast<CUdeviceptr>(a->base);
  return CUDA_SUCCESS;
}

// Managed memory: host memory whose pages the UVM model places on the device when touched
// (managed.cc); nothing is charged to the device at allocation.
CUresult AllocManaged(CUdeviceptr* dptr, size_t bytes) {
  Context* ctx = nullptr;
  if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  Backing backing = AllocateBacking(bytes);
  if (backing.ptr == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation* a = NewContextAllocation(ctx, backing, bytes, AllocKind::kManaged);
  ManagedAllocatedLocked(a);
  AddAllocationLocked(a);
  *dptr = static_cast<CUdeviceptr>(a->base);
  return CUDA_SUCCESS;
}

CUresult AllocPitch(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height, unsigned elem,
                    bool low32) {
  if (pitch == nullptr || width == 0 || height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (elem != 4 && elem != 8 && elem != 16) return CUDA_ERROR_INVALID_VALUE;
  size_t p = RoundUp(width, kPitchAlign);
  if (height > SIZE_MAX / p) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = AllocDevice(dptr, p * height, AllocKind::kPitch, low32);
  if (rc == CUDA_SUCCESS) *pitch = p;
  return rc;
}

CUresult FreeDevice(CUdeviceptr dptr) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (dptr == 0) return CUDA_SUCCESS;
  std::lock_guard<std::mutex> lock(D().mu);
  auto it = D().allocations.find(static_cast<uintptr_t>(dptr));
  if (it == D().allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  Allocation* a = it->second;
  if (a->kind == AllocKind::kHost || a->kind == AllocKind::kVmm || a->kind == AllocKind::kModule) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  D().allocations.erase(it);
  FreeAllocationLocked(a);
  return CUDA_SUCCESS;
}

CUresult AllocHost(void** pp, size_t bytes, unsigned flags) {
  Context* ctx = nullptr;
  if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (pp == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (flags &
      ~(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(D().mu);
  Backing backing = AllocateBacking(bytes < (1u << 20) ? (1u << 20) : bytes);
  if (backing.ptr == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation* a = NewContextAllocation(ctx, backing, bytes, AllocKind::kHost);
  a->host_flags = flags;
  AddAllocationLocked(a);
  *pp = backing.ptr;
  return CUDA_SUCCESS;
}

CUresult GetInfo(size_t* free_bytes, size_t* total_bytes) {
  Context* ctx = nullptr;
  if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (free_bytes == nullptr || total_bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t total = Spec(ctx->device).memory_bytes;
  uint64_t used = DeviceUsedBytes(ctx->phys, /*reclaim=*/true) + ManagedResidentBytes(ctx->phys);
  *total_bytes = total;
  *free_bytes = used >= total ? 0 : total - used;
  return CUDA_SUCCESS;
}

CUresult AddressRange(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  Allocation* a = FindAllocationLocked(static_cast<uintptr_t>(dptr));
  if (a == nullptr) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = static_cast<CUdeviceptr>(a->base);
  if (psize != nullptr) *psize = a->size;
  return CUDA_SUCCESS;
}

CUresult PointerAttribute(void* data, CUpointer_attribute attr, CUdeviceptr ptr, bool lenient) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Allocation* a = FindAllocationLocked(static_cast<uintptr_t>(ptr));
  if (a == nullptr) {
    if (!lenient) return CUDA_ERROR_INVALID_VALUE;
    // cuPointerGetAttributes reports memory the driver does not know as zeros.
    switch (attr) {
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *static_cast<int*>(data) = -2;
        break;
      case CU_POINTER_ATTRIBUTE_CONTEXT:
      case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        *static_cast<uint64_t*>(data) = 0;
        break;
      default:
        *static_cast<unsigned*>(data) = 0;
        break;
    }
    return CUDA_SUCCESS;
  }
  bool host = a->kind == AllocKind::kHost;
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(a->ctx);
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = ptr;
      break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!host && a->kind != AllocKind::kManaged) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
      break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      *static_cast<unsigned*>(data) = 0;
      break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = a->base;
      break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned*>(data) = a->kind == AllocKind::kManaged ? 1 : 0;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = a->device;
      break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      *static_cast<unsigned*>(data) = 0;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      *static_cast<CUdeviceptr*>(data) = a->base;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      *static_cast<size_t*>(data) = a->size;
      break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<unsigned*>(data) = 1;
      break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      *static_cast<unsigned long long*>(data) = 0;
      break;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      *static_cast<unsigned*>(data) = 0;
      break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      *static_cast<unsigned*>(data) = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
      break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<CUmemoryPool*>(data) = reinterpret_cast<CUmemoryPool>(a->pool);
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      *static_cast<unsigned long long*>(data) = a->base;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// The managed allocation holding [p, p + count), or null (with *rc set).
Allocation* ManagedRangeLocked(CUdeviceptr p, size_t count, CUresult* rc) {
  Allocation* a = FindAllocationLocked(static_cast<uintptr_t>(p));
  if (a == nullptr || a->kind != AllocKind::kManaged) {
    *rc = CUDA_ERROR_INVALID_VALUE;
    return nullptr;
  }
  *rc = CheckRangeLocked(static_cast<uintptr_t>(p), count);
  return *rc == CUDA_SUCCESS ? a : nullptr;
}

CUresult AdviseManaged(CUdeviceptr p, size_t count, CUmem_advise advice, CUmemLocation loc) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  CUresult rc = CUDA_SUCCESS;
  Allocation* a = ManagedRangeLocked(p, count, &rc);
  if (a == nullptr) return rc;
  // Advice applies to whole allocations here (the model's owner is per allocation).
  if (advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION) {
    ManagedPreferLocked(a, loc.type == CU_MEM_LOCATION_TYPE_DEVICE);
  } else if (advice == CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION) {
    ManagedPreferLocked(a, false);
  }
  return CUDA_SUCCESS;
}

CUresult PrefetchManaged(CUdeviceptr p, size_t count, CUmemLocation loc, CUstream h,
                         bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  CUresult rc = CUDA_SUCCESS;
  Allocation* a = ManagedRangeLocked(p, count, &rc);
  if (a == nullptr) return rc;
  Stream* s = nullptr;
  if (rc = ResolveStreamLocked(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  uint64_t ns = loc.type == CU_MEM_LOCATION_TYPE_DEVICE
                    ? ManagedTouchLocked(a, static_cast<uintptr_t>(p), count, false).stall_ns
                    : ManagedEvictLocked(a, static_cast<uintptr_t>(p), count);
  uint64_t start = std::max(MonotonicNs(), StreamReadyLocked(s));
  StreamAdvanceLocked(s, start + ns);
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  SIMGPU_GUARD({ return AllocDevice(dptr, bytesize, AllocKind::kDevice); });
}

SIMGPU_API CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  SIMGPU_GUARD({
    if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p = 0;
    CUresult rc = AllocDevice(&p, bytesize, AllocKind::kDevice, /*low32=*/true);
    if (rc == CUDA_SUCCESS) *dptr = static_cast<CUdeviceptr_v1>(p);
    return rc;
  });
}

SIMGPU_API CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                       size_t Height, unsigned int ElementSizeBytes) {
  SIMGPU_GUARD({ return AllocPitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes, false); });
}

SIMGPU_API CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pPitch,
                                    unsigned int WidthInBytes, unsigned int Height,
                                    unsigned int ElementSizeBytes) {
  SIMGPU_GUARD({
    if (dptr == nullptr || pPitch == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p = 0;
    size_t pitch = 0;
    CUresult rc = AllocPitch(&p, &pitch, WidthInBytes, Height, ElementSizeBytes, true);
    if (rc == CUDA_SUCCESS) {
      *dptr = static_cast<CUdeviceptr_v1>(p);
      *pPitch = static_cast<unsigned>(pitch);
    }
    return rc;
  });
}

SIMGPU_API CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  SIMGPU_GUARD({
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return AllocManaged(dptr, bytesize);
  });
}

SIMGPU_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  SIMGPU_GUARD({ return FreeDevice(dptr); });
}
SIMGPU_API CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  SIMGPU_GUARD({ return FreeDevice(dptr); });
}

SIMGPU_API CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  SIMGPU_GUARD({ return AllocHost(pp, bytesize, 0); });
}
SIMGPU_API CUresult cuMemAllocHost(void** pp, unsigned int bytesize) {
  SIMGPU_GUARD({ return AllocHost(pp, bytesize, 0); });
}
SIMGPU_API CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  SIMGPU_GUARD({ return AllocHost(pp, bytesize, Flags); });
}

SIMGPU_API CUresult cuMemFreeHost(void* p) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    auto it = D().allocations.find(reinterpret_cast<uintptr_t>(p));
    if (it == D().allocations.end() || it->second->kind != AllocKind::kHost ||
        it->second->backing.ptr == nullptr) {  // registered memory is unregistered, not freed
      return CUDA_ERROR_INVALID_VALUE;
    }
    Allocation* a = it->second;
    D().allocations.erase(it);
    FreeAllocationLocked(a);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (pdptr == nullptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    Allocation* a = FindAllocationLocked(reinterpret_cast<uintptr_t>(p));
    if (a == nullptr || a->kind != AllocKind::kHost) return CUDA_ERROR_INVALID_VALUE;
    *pdptr = reinterpret_cast<CUdeviceptr>(p);  // unified addressing: the same address
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1* pdptr, void* p, unsigned int Flags) {
  CUdeviceptr d = 0;
  CUresult rc = cuMemHostGetDevicePointer_v2(&d, p, Flags);
  if (rc == CUDA_SUCCESS) {
    if (d > 0xffffffffu) return CUDA_ERROR_NOT_SUPPORTED;
    *pdptr = static_cast<CUdeviceptr_v1>(d);
  }
  return rc;
}

SIMGPU_API CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (pFlags == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    Allocation* a = FindAllocationLocked(reinterpret_cast<uintptr_t>(p));
    if (a == nullptr || a->kind != AllocKind::kHost) return CUDA_ERROR_INVALID_VALUE;
    *pFlags = a->host_flags;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  SIMGPU_GUARD({ return GetInfo(free, total); });
}

SIMGPU_API CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
  SIMGPU_GUARD({
    if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
    size_t f = 0, t = 0;
    CUresult rc = GetInfo(&f, &t);
    if (rc == CUDA_SUCCESS) {
      *free = f > 0xffffffffu ? 0xffffffffu : static_cast<unsigned>(f);
      *total = t > 0xffffffffu ? 0xffffffffu : static_cast<unsigned>(t);
    }
    return rc;
  });
}

SIMGPU_API CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  SIMGPU_GUARD({ return AddressRange(pbase, psize, dptr); });
}

SIMGPU_API CUresult cuMemGetAddressRange(CUdeviceptr_v1* pbase, unsigned int* psize,
                                         CUdeviceptr_v1 dptr) {
  SIMGPU_GUARD({
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult rc = AddressRange(&base, &size, dptr);
    if (rc != CUDA_SUCCESS) return rc;
    if (pbase != nullptr) *pbase = static_cast<CUdeviceptr_v1>(base);
    if (psize != nullptr) *psize = static_cast<unsigned>(size);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                          CUdeviceptr ptr) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    return PointerAttribute(data, attribute, ptr, /*lenient=*/false);
  });
}

SIMGPU_API CUresult cuPointerGetAttributes(unsigned int numAttributes,
                                           CUpointer_attribute* attributes, void** data,
                                           CUdeviceptr ptr) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    for (unsigned i = 0; i < numAttributes; ++i) {
      if (CUresult rc = PointerAttribute(data[i], attributes[i], ptr, true); rc != CUDA_SUCCESS) {
        return rc;
      }
    }
    return CUDA_SUCCESS;
  });
}

// Advice: SET_PREFERRED_LOCATION moves an allocation's pages between the UVM model's owners (a
// device: never evicted; the host: evicted first); other advice only checks the range.
// Prefetches to a device fault the range in (the stream waits for it), to the host evict it.
SIMGPU_API CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                   CUmemLocation location) {
  SIMGPU_GUARD({ return AdviseManaged(devPtr, count, advice, location); });
}
SIMGPU_API CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                CUdevice device) {
  CUmemLocation loc{
      device == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE, device};
  SIMGPU_GUARD({ return AdviseManaged(devPtr, count, advice, loc); });
}
SIMGPU_API CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                          unsigned int flags, CUstream hStream) {
  (void)flags;
  SIMGPU_GUARD({ return PrefetchManaged(devPtr, count, location, hStream, false); });
}
SIMGPU_API CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count,
                                               CUmemLocation location, unsigned int flags,
                                               CUstream hStream) {
  (void)flags;
  SIMGPU_GUARD({ return PrefetchManaged(devPtr, count, location, hStream, true); });
}
SIMGPU_API CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                       CUstream hStream) {
  CUmemLocation loc{
      dstDevice == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE,
      dstDevice};
  SIMGPU_GUARD({ return PrefetchManaged(devPtr, count, loc, hStream, false); });
}
SIMGPU_API CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                            CUstream hStream) {
  CUmemLocation loc{
      dstDevice == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE,
      dstDevice};
  SIMGPU_GUARD({ return PrefetchManaged(devPtr, count, loc, hStream, true); });
}

// Page-locking existing host memory: the range becomes known to the driver (so pointer queries
// and device-pointer lookups find it); nothing is charged to the device.
static CUresult HostRegister(void* p, size_t bytes, unsigned flags) {
  Context* ctx = nullptr;
  if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (p == nullptr || bytes == 0 || (flags & ~0xfu) != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  uintptr_t base = reinterpret_cast<uintptr_t>(p);
  if (FindAllocationLocked(base) != nullptr || FindAllocationLocked(base + bytes - 1) != nullptr) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  auto* a = new Allocation;  // no backing: the memory belongs to the caller
  a->base = base;
  a->size = bytes;
  a->kind = AllocKind::kHost;
  a->ctx = ctx;
  a->device = ctx->device;
  a->phys = ctx->phys;
  a->host_flags = flags;
  AddAllocationLocked(a);
  return CUDA_SUCCESS;
}

SIMGPU_API CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  SIMGPU_GUARD({ return HostRegister(p, bytesize, Flags); });
}
SIMGPU_API CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  SIMGPU_GUARD({ return HostRegister(p, bytesize, Flags); });
}

SIMGPU_API CUresult cuMemHostUnregister(void* p) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    auto it = D().allocations.find(reinterpret_cast<uintptr_t>(p));
    if (it == D().allocations.end() || it->second->kind != AllocKind::kHost ||
        it->second->backing.ptr != nullptr) {
      return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    }
    Allocation* a = it->second;
    D().allocations.erase(it);
    delete a;
    return CUDA_SUCCESS;
  });
}
