// Hooks for CUDA arrays: cuArrayCreate_v2, cuArray3DCreate_v2, cuMipmappedArrayCreate and their
// destroys. The charge is computed from format, channels and extents (array_size.h) before the
// call; after it, when the driver reports a larger footprint through
// cu(Mipmapped)ArrayGetMemoryRequirements, the difference is charged too (or the array is
// destroyed and the call refused if that does not fit).
#include "intercept/hooks/hook_util.h"
#include "intercept/memory/array_size.h"

namespace vgpu::intercept {
namespace {

// Settles the charge of a new array with the driver's own size. False: destroy and refuse.
template <typename Handle>
bool SettleWithDriverSize(int device, uint64_t charged, Handle handle,
                          CUresult (*query)(CUDA_ARRAY_MEMORY_REQUIREMENTS*, Handle, CUdevice),
                          uint64_t* final_size) {
  *final_size = charged;
  if (query == nullptr) return true;
  CUDA_ARRAY_MEMORY_REQUIREMENTS req{};
  if (query(&req, handle, device) != CUDA_SUCCESS || req.size <= charged) return true;
  if (!GetRuntime().accountant.Charge(device, req.size - charged)) return false;
  *final_size = req.size;
  return true;
}

template <typename Handle, typename Create>
CUresult CreateArray(Handle* out, uint64_t bytes, Space space, const char* what, Create create,
                     CUresult (*query)(CUDA_ARRAY_MEMORY_REQUIREMENTS*, Handle, CUdevice),
                     CUresult (*destroy)(Handle)) {
  DeviceContext dc;
  if (out == nullptr || bytes == 0 || !CurrentDeviceContext(&dc)) return create();
  Accountant& acct = GetRuntime().accountant;
  if (!ChargeOrRefuse(dc.device, bytes, what)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = create();
  if (r != CUDA_SUCCESS) {
    acct.Uncharge(dc.device, bytes);
    return r;
  }
  uint64_t size = bytes;
  if (!SettleWithDriverSize(dc.device, bytes, *out, query, &size)) {
    if (destroy != nullptr) destroy(*out);
    acct.Uncharge(dc.device, bytes);
    *out = nullptr;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Track(reinterpret_cast<uint64_t>(*out), space, dc.device, dc.context, size);
  return r;
}

template <typename Handle>
CUresult DestroyArray(Handle handle, Space space, CUresult (*real)(Handle)) {
  AllocTable& table = GetRuntime().table;
  AllocEntry entry;
  uint64_t key = reinterpret_cast<uint64_t>(handle);
  bool known = handle != nullptr && table.Remove(key, space, &entry);
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

}  // namespace

extern "C" CUresult cuArrayCreate_v2(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* desc) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuArrayCreate_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  uint64_t bytes = desc != nullptr ? ArrayBytes(*desc) : 0;
  return CreateArray(
      array, bytes, Space::kArray, "cuArrayCreate", [&] { return real(array, desc); },
      g_cuda.cuArrayGetMemoryRequirements, g_cuda.cuArrayDestroy);
}

extern "C" CUresult cuArray3DCreate_v2(CUarray* array,
                                       const CUDA_ARRAY3D_DESCRIPTOR* desc) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuArray3DCreate_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  uint64_t bytes = desc != nullptr ? Array3DBytes(*desc) : 0;
  return CreateArray(
      array, bytes, Space::kArray, "cuArray3DCreate", [&] { return real(array, desc); },
      g_cuda.cuArrayGetMemoryRequirements, g_cuda.cuArrayDestroy);
}

extern "C" CUresult cuArrayCreate(CUarray* array, const CUDA_ARRAY_DESCRIPTOR_v1* desc) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuArrayCreate;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  uint64_t bytes = desc != nullptr ? ArrayLevelBytes(desc->Format, desc->NumChannels, desc->Width,
                                                     desc->Height, 0)
                                   : 0;
  return CreateArray(
      array, bytes, Space::kArray, "cuArrayCreate", [&] { return real(array, desc); },
      g_cuda.cuArrayGetMemoryRequirements, g_cuda.cuArrayDestroy);
}

extern "C" CUresult cuArray3DCreate(CUarray* array,
                                    const CUDA_ARRAY3D_DESCRIPTOR_v1* desc) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuArray3DCreate;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  uint64_t bytes = desc != nullptr ? ArrayLevelBytes(desc->Format, desc->NumChannels, desc->Width,
                                                     desc->Height, desc->Depth)
                                   : 0;
  return CreateArray(
      array, bytes, Space::kArray, "cuArray3DCreate", [&] { return real(array, desc); },
      g_cuda.cuArrayGetMemoryRequirements, g_cuda.cuArrayDestroy);
}

extern "C" CUresult cuArrayDestroy(CUarray array) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuArrayDestroy == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return DestroyArray(array, Space::kArray, g_cuda.cuArrayDestroy);
}

extern "C" CUresult cuMipmappedArrayCreate(CUmipmappedArray* array,
                                           const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                           unsigned int levels) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuMipmappedArrayCreate;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  uint64_t bytes = desc != nullptr ? MipmappedArrayBytes(*desc, levels) : 0;
  return CreateArray(
      array, bytes, Space::kMipmap, "cuMipmappedArrayCreate",
      [&] { return real(array, desc, levels); }, g_cuda.cuMipmappedArrayGetMemoryRequirements,
      g_cuda.cuMipmappedArrayDestroy);
}

extern "C" CUresult cuMipmappedArrayDestroy(CUmipmappedArray array) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuMipmappedArrayDestroy == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return DestroyArray(array, Space::kMipmap, g_cuda.cuMipmappedArrayDestroy);
}

}  // namespace vgpu::intercept
