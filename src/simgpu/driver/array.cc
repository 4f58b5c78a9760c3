// CUDA arrays and mipmapped arrays. Device memory taken = width x height x depth x element size
// (element size = channel size x channels for the plain formats, the pixel size for packed,
// planar and block-compressed ones), summed over all levels of a mipmapped array, with 0
// extents counted as 1. Stored linearly in host memory so copies to and from arrays work.
#include <algorithm>
#include <vector>

#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

struct Mipmap {
  Tag tag = Tag::kMipmap;
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  std::vector<ArrayObj*> levels;
  Backing backing;
  Context* ctx = nullptr;
  int phys = 0;
  uint64_t charged = 0;
};

std::vector<ArrayObj*>& Arrays() {
  static auto* arrays = new std::vector<ArrayObj*>;
  return *arrays;
}
std::vector<Mipmap*>& Mipmaps() {
  static auto* mipmaps = new std::vector<Mipmap*>;
  return *mipmaps;
}

// Per-element bytes: plain formats multiply by the channel count, the others do not.
bool ElementBytes(const CUDA_ARRAY3D_DESCRIPTOR& d, size_t* out) {
  size_t f = FormatBytes(d.Format);
  if (f == 0) return false;
  switch (d.Format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_FLOAT:
      if (d.NumChannels != 1 && d.NumChannels != 2 && d.NumChannels != 4) return false;
      *out = f * d.NumChannels;
      return true;
    default:
      *out = f;
      return true;
  }
}

// Fills the geometry of `a` from its descriptor; false if invalid or too large.
bool Shape(ArrayObj* a) {
  const CUDA_ARRAY3D_DESCRIPTOR& d = a->desc;
  size_t elem = 0;
  if (d.Width == 0 || !ElementBytes(d, &elem)) return false;
  if ((d.Flags & CUDA_ARRAY3D_CUBEMAP) && (d.Width != d.Height || d.Depth % 6 != 0)) return false;
  size_t h = std::max<size_t>(d.Height, 1);
  size_t z = std::max<size_t>(d.Depth, 1);
  if (d.Width > (size_t{1} << 32) || h > (size_t{1} << 32) || z > (size_t{1} << 32)) return false;
  a->row_bytes = d.Width * elem;
  a->rows = h;
  unsigned __int128 total = static_cast<unsigned __int128>(a->row_bytes) * h * z;
  if (total > (static_cast<unsigned __int128>(1) << 48)) return false;
  a->bytes = static_cast<size_t>(total);
  return true;
}

CUresult CreateArray(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR& desc) {
  Context* ctx = nullptr;
  if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ArrayObj shape;
  shape.desc = desc;
  if (!Shape(&shape)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  ArrayObj* a = Recycler<ArrayObj>::Make();
  *a = shape;
  a->ctx = ctx;
  a->phys = ctx->phys;
  a->charged = a->bytes;
  if (!ChargeLocked(a->phys, a->charged)) {
    Recycler<ArrayObj>::Retire(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->backing = AllocateBacking(a->bytes);
  if (a->backing.ptr == nullptr) {
    UnchargeLocked(a->phys, a->charged);
    Recycler<ArrayObj>::Retire(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->data = static_cast<uint8_t*>(a->backing.ptr);
  Arrays().push_back(a);
  *out = reinterpret_cast<CUarray>(a);
  return CUDA_SUCCESS;
}

void DestroyArrayLocked(ArrayObj* a) {
  UnchargeLocked(a->phys, a->charged);
  FreeBacking(&a->backing);
  Recycler<ArrayObj>::Retire(a);
  auto& v = Arrays();
  v.erase(std::remove(v.begin(), v.end(), a), v.end());
}

void DestroyMipmapLocked(Mipmap* m) {
  UnchargeLocked(m->phys, m->charged);
  FreeBacking(&m->backing);
  for (ArrayObj* level : m->levels) Recycler<ArrayObj>::Retire(level);
  m->levels.clear();
  Recycler<Mipmap>::Retire(m);
  auto& v = Mipmaps();
  v.erase(std::remove(v.begin(), v.end(), m), v.end());
}

CUDA_ARRAY3D_DESCRIPTOR From2D(const CUDA_ARRAY_DESCRIPTOR& d) {
  CUDA_ARRAY3D_DESCRIPTOR out{};
  out.Width = d.Width;
  out.Height = d.Height;
  out.Format = d.Format;
  out.NumChannels = d.NumChannels;
  return out;
}

Mipmap* AsMipmap(CUmipmappedArray h) {
  auto* m = reinterpret_cast<Mipmap*>(h);
  if (m == nullptr || m->tag != Tag::kMipmap) return nullptr;
  return m;
}

// What cu*GetMemoryRequirements report for an object of `bytes`: whole granules, aligned.
CUresult FillMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* req, uint64_t bytes) {
  if (req == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *req = CUDA_ARRAY_MEMORY_REQUIREMENTS{};
  req->size = RoundUp(bytes, kGranularity);
  req->alignment = kGranularity;
  return CUDA_SUCCESS;
}

}  // namespace

size_t FormatBytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
    // Block-compressed: 4x4 pixels in 8 (BC1, BC4) or 16 bytes, i.e. at most one byte a pixel.
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
    case CU_AD_FORMAT_BC2_UNORM:
    case CU_AD_FORMAT_BC2_UNORM_SRGB:
    case CU_AD_FORMAT_BC3_UNORM:
    case CU_AD_FORMAT_BC3_UNORM_SRGB:
    case CU_AD_FORMAT_BC5_UNORM:
    case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16:
    case CU_AD_FORMAT_BC6H_SF16:
    case CU_AD_FORMAT_BC7_UNORM:
    case CU_AD_FORMAT_BC7_UNORM_SRGB:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
    case CU_AD_FORMAT_NV12:  // 1.5 bytes a pixel, rounded up
    case CU_AD_FORMAT_NV16:
    case CU_AD_FORMAT_YUY2:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
    case CU_AD_FORMAT_P010:  // 10- and 16-bit 4:2:0 / 4:2:2 planar: 3 or 4 bytes, rounded up
    case CU_AD_FORMAT_P016:
    case CU_AD_FORMAT_P210:
    case CU_AD_FORMAT_P216:
    case CU_AD_FORMAT_Y210:
    case CU_AD_FORMAT_Y216:
    case CU_AD_FORMAT_AYUV:
    case CU_AD_FORMAT_Y410:
    case CU_AD_FORMAT_Y444_PLANAR8:  // 3 bytes, rounded up
    case CU_AD_FORMAT_YUV444_8bit_SemiPlanar:
      return 4;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
    case CU_AD_FORMAT_Y416:
    case CU_AD_FORMAT_Y444_PLANAR10:  // 6 bytes, rounded up
    case CU_AD_FORMAT_YUV444_16bit_SemiPlanar:
      return 8;
    default:
      return 0;
  }
}

ArrayObj* AsArray(CUarray h) {
  auto* a = reinterpret_cast<ArrayObj*>(h);
  if (a == nullptr || a->tag != Tag::kArray) return nullptr;
  return a;
}

void ReleaseContextArraysLocked(Context* ctx) {
  std::vector<ArrayObj*> arrays;
  for (ArrayObj* a : Arrays()) {
    if (a->ctx == ctx) arrays.push_back(a);
  }
  for (ArrayObj* a : arrays) DestroyArrayLocked(a);
  std::vector<Mipmap*> mipmaps;
  for (Mipmap* m : Mipmaps()) {
    if (m->ctx == ctx) mipmaps.push_back(m);
  }
  for (Mipmap* m : mipmaps) DestroyMipmapLocked(m);
}

}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuArrayCreate_v2(CUarray* pHandle,
                                     const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  SIMGPU_GUARD({
    if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return CreateArray(pHandle, From2D(*pAllocateArray));
  });
}

SIMGPU_API CUresult cuArrayCreate(CUarray* pHandle,
                                  const CUDA_ARRAY_DESCRIPTOR_v1* pAllocateArray) {
  SIMGPU_GUARD({
    if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY_DESCRIPTOR d{pAllocateArray->Width, pAllocateArray->Height, pAllocateArray->Format,
                            pAllocateArray->NumChannels};
    return CreateArray(pHandle, From2D(d));
  });
}

SIMGPU_API CUresult cuArray3DCreate_v2(CUarray* pHandle,
                                       const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  SIMGPU_GUARD({
    if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return CreateArray(pHandle, *pAllocateArray);
  });
}

SIMGPU_API CUresult cuArray3DCreate(CUarray* pHandle,
                                    const CUDA_ARRAY3D_DESCRIPTOR_v1* pAllocateArray) {
  SIMGPU_GUARD({
    if (pAllocateArray == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d{};
    d.Width = pAllocateArray->Width;
    d.Height = pAllocateArray->Height;
    d.Depth = pAllocateArray->Depth;
    d.Format = pAllocateArray->Format;
    d.NumChannels = pAllocateArray->NumChannels;
    d.Flags = pAllocateArray->Flags;
    return CreateArray(pHandle, d);
  });
}

SIMGPU_API CUresult cuArrayDestroy(CUarray hArray) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    ArrayObj* a = AsArray(hArray);
    if (a == nullptr || a->level) return CUDA_ERROR_INVALID_HANDLE;
    DestroyArrayLocked(a);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor,
                                              CUarray hArray) {
  SIMGPU_GUARD({
    ArrayObj* a = AsArray(hArray);
    if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (pArrayDescriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pArrayDescriptor = a->desc;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* pArrayDescriptor,
                                            CUarray hArray) {
  SIMGPU_GUARD({
    ArrayObj* a = AsArray(hArray);
    if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (pArrayDescriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
    pArrayDescriptor->Width = a->desc.Width;
    pArrayDescriptor->Height = a->desc.Height;
    pArrayDescriptor->Format = a->desc.Format;
    pArrayDescriptor->NumChannels = a->desc.NumChannels;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* req, CUarray array,
                                                 CUdevice device) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
    ArrayObj* a = AsArray(array);
    if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    return FillMemoryRequirements(req, a->bytes);
  });
}

SIMGPU_API CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle,
                                           const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                           unsigned int numMipmapLevels) {
  SIMGPU_GUARD({
    Context* ctx = nullptr;
    if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
    if (pHandle == nullptr || desc == nullptr || numMipmapLevels == 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    bool layered = desc->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
    size_t largest = std::max({desc->Width, desc->Height, layered ? 0 : desc->Depth});
    unsigned max_levels = 1;
    while ((largest >> max_levels) > 0) ++max_levels;
    if (numMipmapLevels > max_levels) return CUDA_ERROR_INVALID_VALUE;
    std::vector<ArrayObj> shapes(numMipmapLevels);
    size_t total = 0;
    for (unsigned l = 0; l < numMipmapLevels; ++l) {
      ArrayObj& a = shapes[l];
      a.desc = *desc;
      a.desc.Width = std::max<size_t>(desc->Width >> l, 1);
      if (desc->Height != 0) a.desc.Height = std::max<size_t>(desc->Height >> l, 1);
      if (desc->Depth != 0 && !layered) a.desc.Depth = std::max<size_t>(desc->Depth >> l, 1);
      a.level = true;
      if (!Shape(&a)) return CUDA_ERROR_INVALID_VALUE;
      total += a.bytes;
    }
    std::lock_guard<std::mutex> lock(D().mu);
    if (!ChargeLocked(ctx->phys, total)) return CUDA_ERROR_OUT_OF_MEMORY;
    Backing backing = AllocateBacking(total);
    if (backing.ptr == nullptr) {
      UnchargeLocked(ctx->phys, total);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    Mipmap* m = Recycler<Mipmap>::Make();
    m->desc = *desc;
    m->ctx = ctx;
    m->phys = ctx->phys;
    m->charged = total;
    m->backing = backing;
    size_t offset = 0;
    for (ArrayObj& shape : shapes) {
      ArrayObj* a = Recycler<ArrayObj>::Make();
      *a = shape;
      a->data = static_cast<uint8_t*>(backing.ptr) + offset;
      a->ctx = ctx;
      a->phys = m->phys;
      offset += a->bytes;
      m->levels.push_back(a);
    }
    Mipmaps().push_back(m);
    *pHandle = reinterpret_cast<CUmipmappedArray>(m);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMipmappedArrayGetLevel(CUarray* pLevelArray, CUmipmappedArray hMipmappedArray,
                                             unsigned int level) {
  SIMGPU_GUARD({
    std::lock_guard<std::mutex> lock(D().mu);
    Mipmap* m = AsMipmap(hMipmappedArray);
    if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (pLevelArray == nullptr || level >= m->levels.size()) return CUDA_ERROR_INVALID_VALUE;
    *pLevelArray = reinterpret_cast<CUarray>(m->levels[level]);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    Mipmap* m = AsMipmap(hMipmappedArray);
    if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    DestroyMipmapLocked(m);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* req,
                                                          CUmipmappedArray mipmap,
                                                          CUdevice device) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
    Mipmap* m = AsMipmap(mipmap);
    if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    return FillMemoryRequirements(req, m->charged);
  });
}

SIMGPU_API CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR_v1* pArrayDescriptor,
                                         CUarray hArray) {
  ArrayObj* a = AsArray(hArray);
  if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (pArrayDescriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  pArrayDescriptor->Width = static_cast<unsigned>(a->desc.Width);
  pArrayDescriptor->Height = static_cast<unsigned>(a->desc.Height);
  pArrayDescriptor->Format = a->desc.Format;
  pArrayDescriptor->NumChannels = a->desc.NumChannels;
  return CUDA_SUCCESS;
}

SIMGPU_API CUresult cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR_v1* pArrayDescriptor,
                                           CUarray hArray) {
  ArrayObj* a = AsArray(hArray);
  if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (pArrayDescriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  pArrayDescriptor->Width = static_cast<unsigned>(a->desc.Width);
  pArrayDescriptor->Height = static_cast<unsigned>(a->desc.Height);
  pArrayDescriptor->Depth = static_cast<unsigned>(a->desc.Depth);
  pArrayDescriptor->Format = a->desc.Format;
  pArrayDescriptor->NumChannels = a->desc.NumChannels;
  pArrayDescriptor->Flags = a->desc.Flags;
  return CUDA_SUCCESS;
}
