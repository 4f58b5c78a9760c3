// Hooks for linear device memory (cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged, cuMemFree)
// and virtual memory management (cuMemCreate, cuMemRelease).
//
// Pattern of every allocation hook: charge first (all or nothing, atomically across the slice's
// processes), then call the driver, give the charge back if the driver fails, and record the
// allocation so that its free finds it in O(1). Calls the driver will reject anyway (no
// context, null output pointer, zero size) are passed through uncharged.
#include "intercept/hook_util.h"

namespace vgpu::intercept {
namespace {

constexpr uint64_t kPitchEstimateAlignment = 512;

uint64_t MulSat(uint64_t a, uint64_t b) {
  unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return r > ~0ULL ? ~0ULL : static_cast<uint64_t>(r);
}

// Frees `ptr` after a charge could not be completed, keeping the driver's result private.
void FreeQuietly(CUdeviceptr ptr) {
  if (g_cuda.cuMemFree_v2 != nullptr) g_cuda.cuMemFree_v2(ptr);
}

}  // namespace

extern "C" CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemAlloc_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  DeviceContext dc;
  if (dptr == nullptr || bytesize == 0 || !CurrentDeviceContext(&dc)) return real(dptr, bytesize);
  if (!ChargeOrRefuse(dc.device, bytesize, "cuMemAlloc")) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = real(dptr, bytesize);
  if (r != CUDA_SUCCESS) {
    GetRuntime().accountant.Uncharge(dc.device, bytesize);
    return r;
  }
  Track(*dptr, Space::kPointer, dc.device, dc.context, bytesize);
  return r;
}

extern "C" CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize,
                                      unsigned int flags) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemAllocManaged;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  DeviceContext dc;
  if (dptr == nullptr || bytesize == 0 || !CurrentDeviceContext(&dc)) {
    return real(dptr, bytesize, flags);
  }
  // Managed memory may migrate to the device in full: counted as device memory.
  if (!ChargeOrRefuse(dc.device, bytesize, "cuMemAllocManaged")) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = real(dptr, bytesize, flags);
  if (r != CUDA_SUCCESS) {
    GetRuntime().accountant.Uncharge(dc.device, bytesize);
    return r;
  }
  Track(*dptr, Space::kPointer, dc.device, dc.context, bytesize);
  return r;
}

extern "C" CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width_bytes,
                                       size_t height, unsigned int element_size) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemAllocPitch_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  DeviceContext dc;
  if (dptr == nullptr || pitch == nullptr || width_bytes == 0 || height == 0 ||
      !CurrentDeviceContext(&dc)) {
    return real(dptr, pitch, width_bytes, height, element_size);
  }
  // The pitch is known only after the call: charge an estimate, then settle on pitch x height.
  uint64_t aligned = (static_cast<uint64_t>(width_bytes) + kPitchEstimateAlignment - 1) /
                     kPitchEstimateAlignment * kPitchEstimateAlignment;
  uint64_t estimate = MulSat(aligned, height);
  Accountant& acct = GetRuntime().accountant;
  if (!ChargeOrRefuse(dc.device, estimate, "cuMemAllocPitch")) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = real(dptr, pitch, width_bytes, height, element_size);
  if (r != CUDA_SUCCESS) {
    acct.Uncharge(dc.device, estimate);
    return r;
  }
  uint64_t actual = MulSat(*pitch, height);
  if (actual > estimate) {
    if (!acct.Charge(dc.device, actual - estimate)) {
      FreeQuietly(*dptr);
      acct.Uncharge(dc.device, estimate);
      *dptr = 0;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  } else if (actual < estimate) {
    acct.Uncharge(dc.device, estimate - actual);
  }
  Track(*dptr, Space::kPointer, dc.device, dc.context, actual);
  return r;
}

extern "C" CUresult cuMemFree_v2(CUdeviceptr dptr) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemFree_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  AllocTable& table = GetRuntime().table;
  AllocEntry entry;
  bool known = dptr != 0 && table.Remove(dptr, Space::kPointer, &entry);
  CUresult r = real(dptr);
  if (known) {
    if (r == CUDA_SUCCESS) {
      ReleaseEntry(entry);
    } else {
      table.Insert(entry);  // still allocated
    }
  }
  return r;
}

extern "C" CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                const CUmemAllocationProp* prop,
                                unsigned long long flags) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemCreate;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  // Only device memory is counted; host and host-NUMA locations pass through untouched.
  if (handle == nullptr || prop == nullptr || size == 0 ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id < 0) {
    return real(handle, size, prop, flags);
  }
  int device = prop->location.id;
  if (!ChargeOrRefuse(device, size, "cuMemCreate")) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = real(handle, size, prop, flags);
  if (r != CUDA_SUCCESS) {
    GetRuntime().accountant.Uncharge(device, size);
    return r;
  }
  Track(*handle, Space::kVmm, device, nullptr, size);
  return r;
}

extern "C" CUresult cuMemRelease(CUmemGenericAllocationHandle handle) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemRelease;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  AllocTable& table = GetRuntime().table;
  AllocEntry entry;
  bool known = table.Remove(handle, Space::kVmm, &entry);
  CUresult r = real(handle);
  if (known) {
    if (r == CUDA_SUCCESS) {
      ReleaseEntry(entry);
    } else {
      table.Insert(entry);
    }
  }
  return r;
}

}  // namespace vgpu::intercept
