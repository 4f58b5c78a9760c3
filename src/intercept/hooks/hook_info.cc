// What a process in a slice sees as its GPU: total memory is the slice's limit (never more than
// the device has), used memory is what the whole slice has charged, and free memory is the rest
// (never more than the device really has free). A spilling slice (spill.h) is told its limit as
// total and its slice's free memory even when the GPU has less, since what the GPU cannot hold is
// served from managed memory; every other slice, a protected one in spill mode included, never more
// than the GPU has.
#include "intercept/hooks/hook_util.h"
#include "intercept/memory/spill.h"

namespace vgpu::intercept {

namespace {

// Replaces the device's numbers with the slice's. False when the current device is unlimited.
bool SliceInfo(uint64_t* free, uint64_t* total) {
  DeviceContext dc;
  if (!CurrentDeviceContext(&dc)) return false;
  Runtime& rt = GetRuntime();
  uint64_t limit = rt.accountant.Limit(dc.device);
  if (limit == kNoLimit) return false;
  rt.pools.ReconcileAll(dc.device);
  uint64_t used = rt.accountant.SliceUsed(dc.device);
  bool spills = SliceSpills(rt.config);
  uint64_t slice_total = limit < *total || spills ? limit : *total;
  uint64_t slice_free = slice_total > used ? slice_total - used : 0;
  *total = slice_total;
  if (slice_free < *free || spills) *free = slice_free;
  return true;
}

}  // namespace

extern "C" CUresult cuMemGetInfo_v2(size_t* free, size_t* total) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemGetInfo_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = real(free, total);
  if (r != CUDA_SUCCESS || free == nullptr || total == nullptr) return r;
  uint64_t f = *free, t = *total;
  if (SliceInfo(&f, &t)) {
    *free = f;
    *total = t;
  }
  return r;
}

extern "C" CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemGetInfo;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = real(free, total);
  if (r != CUDA_SUCCESS || free == nullptr || total == nullptr) return r;
  uint64_t f = *free, t = *total;
  if (SliceInfo(&f, &t)) {
    *free = static_cast<unsigned int>(f);
    *total = static_cast<unsigned int>(t);
  }
  return r;
}

extern "C" CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuDeviceTotalMem;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = real(bytes, dev);
  if (r != CUDA_SUCCESS || bytes == nullptr) return r;
  uint64_t limit = GetRuntime().accountant.Limit(dev);
  if (limit < *bytes) *bytes = static_cast<unsigned int>(limit);
  return r;
}

extern "C" CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuDeviceTotalMem_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = real(bytes, dev);
  if (r != CUDA_SUCCESS || bytes == nullptr) return r;
  uint64_t limit = GetRuntime().accountant.Limit(dev);
  if (limit < *bytes) *bytes = limit;
  return r;
}

}  // namespace vgpu::intercept
