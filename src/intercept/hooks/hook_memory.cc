// Hooks for linear device memory (cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged, cuMemFree)
// and virtual memory management (cuMemCreate, cuMemRelease).
//
// Pattern of every allocation hook: charge first (all or nothing, atomically across the slice's
// processes), then call the driver, give the charge back if the driver fails, and record the
// allocation so that its free finds it in O(1). Calls the driver will reject anyway (no
// context, null output pointer, zero size) are passed through uncharged.
#include "common/log.h"
#include "intercept/hooks/hook_util.h"
#include "intercept/memory/spill.h"

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

// Charges `bytes` on the current device, then runs call(&key): the driver allocation that
// stores the new pointer in key. `valid` false: the driver will reject the call; pass through.
template <typename Call>
CUresult ChargedAlloc(bool valid, uint64_t bytes, const char* what, Call call) {
  DeviceContext dc;
  uint64_t key = 0;
  if (!valid || bytes == 0 || !CurrentDeviceContext(&dc)) return call(&key);
  if (!ChargeOrRefuse(dc.device, bytes, what)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = call(&key);
  if (r != CUDA_SUCCESS) {
    GetRuntime().accountant.Uncharge(dc.device, bytes);
    return r;
  }
  Track(key, Space::kPointer, dc.device, dc.context, bytes);
  return r;
}

// cuMemAlloc_v2 with the spill path (spill.h): charged as any allocation; when the driver cannot
// hold it and the slice spills, it is served from managed memory preferring the host.
CUresult SpillingAlloc(CUdeviceptr* dptr, size_t bytes) {
  auto real = g_cuda.cuMemAlloc_v2;
  DeviceContext dc;
  if (dptr == nullptr || bytes == 0 || !CurrentDeviceContext(&dc)) return real(dptr, bytes);
  if (!ChargeOrRefuse(dc.device, bytes, "cuMemAlloc")) return CUDA_ERROR_OUT_OF_MEMORY;
  Runtime& rt = GetRuntime();
  uint16_t flags = 0;
  CUresult r = real(dptr, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    if (SliceSpills(rt.config)) {
      r = SpillAllocate(dptr, bytes, dc.device);
      if (r == CUDA_SUCCESS) {
        flags = kEntrySpilled;
        NoteSpilled(rt.accountant.region(), dc.device, bytes);
        VGPU_LOG_DEBUG("cuMemAlloc of %llu bytes on device %d spilled to managed memory",
                       static_cast<unsigned long long>(bytes), dc.device);
      }
    } else if (rt.config.memory_mode == kMemorySpill) {
      NoteGpuRefusal(rt.accountant.region());  // a protected slice: its memory stays device memory
    }
  }
  if (r != CUDA_SUCCESS) {
    rt.accountant.Uncharge(dc.device, bytes);
    return r;
  }
  Track(*dptr, Space::kPointer, dc.device, dc.context, bytes, -1, flags);
  return r;
}

// Pitched allocation: the pitch is known only after the call, so an estimate is charged first
// and then settled on pitch x height. call(&key, &pitch) performs the driver allocation.
template <typename Call>
CUresult PitchedAlloc(bool valid, uint64_t width, uint64_t height, Call call) {
  DeviceContext dc;
  uint64_t key = 0, pitch = 0;
  if (!valid || width == 0 || height == 0 || !CurrentDeviceContext(&dc)) {
    return call(&key, &pitch);
  }
  uint64_t aligned =
      (width + kPitchEstimateAlignment - 1) / kPitchEstimateAlignment * kPitchEstimateAlignment;
  uint64_t estimate = MulSat(aligned, height);
  Accountant& acct = GetRuntime().accountant;
  if (!ChargeOrRefuse(dc.device, estimate, "cuMemAllocPitch")) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = call(&key, &pitch);
  if (r != CUDA_SUCCESS) {
    acct.Uncharge(dc.device, estimate);
    return r;
  }
  uint64_t actual = MulSat(pitch, height);
  if (actual > estimate) {
    if (!acct.Charge(dc.device, actual - estimate)) {
      FreeQuietly(key);
      acct.Uncharge(dc.device, estimate);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  } else if (actual < estimate) {
    acct.Uncharge(dc.device, estimate - actual);
  }
  Track(key, Space::kPointer, dc.device, dc.context, actual);
  return r;
}

// Forgets `key` (in `space`), frees it with call(), and gives the charge back if it worked.
template <typename Call>
CUresult TrackedFree(uint64_t key, Space space, Call call) {
  AllocTable& table = GetRuntime().table;
  AllocEntry entry;
  bool known = key != 0 && table.Remove(key, space, &entry);
  CUresult r = call();
  if (known) {
    if (r == CUDA_SUCCESS) {
      ReleaseEntry(entry);
    } else {
      table.Insert(entry);  // still allocated
    }
  }
  return r;
}

}  // namespace

extern "C" CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemAlloc_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (GetRuntime().config.memory_mode == kMemorySpill) return SpillingAlloc(dptr, bytesize);
  return ChargedAlloc(dptr != nullptr, bytesize, "cuMemAlloc", [&](uint64_t* key) {
    CUresult r = real(dptr, bytesize);
    if (r == CUDA_SUCCESS && dptr != nullptr) *key = *dptr;
    return r;
  });
}

extern "C" CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemAlloc;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return ChargedAlloc(dptr != nullptr, bytesize, "cuMemAlloc", [&](uint64_t* key) {
    CUresult r = real(dptr, bytesize);
    if (r == CUDA_SUCCESS && dptr != nullptr) *key = *dptr;
    return r;
  });
}

extern "C" CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize,
                                      unsigned int flags) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemAllocManaged;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  // Managed memory may migrate to the device in full: counted as device memory.
  return ChargedAlloc(dptr != nullptr, bytesize, "cuMemAllocManaged", [&](uint64_t* key) {
    CUresult r = real(dptr, bytesize, flags);
    if (r == CUDA_SUCCESS && dptr != nullptr) *key = *dptr;
    return r;
  });
}

extern "C" CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width_bytes,
                                       size_t height, unsigned int element_size) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemAllocPitch_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return PitchedAlloc(dptr != nullptr && pitch != nullptr, width_bytes, height,
                      [&](uint64_t* key, uint64_t* out_pitch) {
                        CUresult r = real(dptr, pitch, width_bytes, height, element_size);
                        if (r == CUDA_SUCCESS && dptr != nullptr && pitch != nullptr) {
                          *key = *dptr;
                          *out_pitch = *pitch;
                        }
                        return r;
                      });
}

extern "C" CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pitch,
                                    unsigned int width_bytes, unsigned int height,
                                    unsigned int element_size) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemAllocPitch;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return PitchedAlloc(dptr != nullptr && pitch != nullptr, width_bytes, height,
                      [&](uint64_t* key, uint64_t* out_pitch) {
                        CUresult r = real(dptr, pitch, width_bytes, height, element_size);
                        if (r == CUDA_SUCCESS && dptr != nullptr && pitch != nullptr) {
                          *key = *dptr;
                          *out_pitch = *pitch;
                        }
                        return r;
                      });
}

extern "C" CUresult cuMemFree_v2(CUdeviceptr dptr) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemFree_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return TrackedFree(dptr, Space::kPointer, [&] { return real(dptr); });
}

extern "C" CUresult cuMemFree(CUdeviceptr_v1 dptr) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMemFree;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return TrackedFree(dptr, Space::kPointer, [&] { return real(dptr); });
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
  return TrackedFree(handle, Space::kVmm, [&] { return real(handle); });
}

}  // namespace vgpu::intercept
