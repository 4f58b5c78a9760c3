// The data movement behind every memcpy and memset: device memory is host memory, so a copy is
// a memmove per row after the device-side ranges have been checked against live allocations
// (a copy to freed or foreign memory fails with CUDA_ERROR_INVALID_VALUE instead of crashing).
#include <cstring>

#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

struct Side {
  uint8_t* base = nullptr;  // address of (x, y, z) = (0, 0, 0)
  size_t pitch = 0;
  size_t height = 0;
};

// Resolves one side of a copy and checks that the footprint of the copy lies inside it.
CUresult ResolveSide(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array,
                     size_t pitch, size_t height, size_t x, size_t y, size_t z, size_t width,
                     size_t rows, size_t depth, Side* out) {
  if (type == CU_MEMORYTYPE_ARRAY) {
    ArrayObj* a = AsArray(array);
    if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    out->base = a->data;
    out->pitch = a->row_bytes;
    out->height = a->rows;
    size_t slices = a->bytes / (a->row_bytes * a->rows);
    if (x + width > a->row_bytes || y + rows > a->rows || z + depth > slices) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  }
  out->pitch = pitch != 0 ? pitch : width;
  out->height = height != 0 ? height : rows;
  if (x + width > out->pitch && rows > 1) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t p;
  bool check;
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      if (host == nullptr) return CUDA_ERROR_INVALID_VALUE;
      p = reinterpret_cast<uintptr_t>(host);
      check = false;
      break;
    case CU_MEMORYTYPE_DEVICE:
      p = static_cast<uintptr_t>(device);
      check = true;
      break;
    case CU_MEMORYTYPE_UNIFIED:
      p = static_cast<uintptr_t>(device);
      check = FindAllocationLocked(p) != nullptr;  // unknown addresses are host memory
      if (p == 0) return CUDA_ERROR_INVALID_VALUE;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  out->base = reinterpret_cast<uint8_t*>(p);
  if (check && width > 0 && rows > 0 && depth > 0) {
    size_t first = (z * out->height + y) * out->pitch + x;
    size_t last = ((z + depth - 1) * out->height + (y + rows - 1)) * out->pitch + x + width;
    if (CUresult rc = CheckRangeLocked(p + first, last - first); rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUresult Copy3DLocked(const CUDA_MEMCPY3D& c) {
  size_t depth = c.Depth == 0 ? 1 : c.Depth;
  size_t rows = c.Height == 0 ? 1 : c.Height;
  Side src, dst;
  if (CUresult rc =
          ResolveSide(c.srcMemoryType, c.srcHost, c.srcDevice, c.srcArray, c.srcPitch, c.srcHeight,
                      c.srcXInBytes, c.srcY, c.srcZ, c.WidthInBytes, rows, depth, &src);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  if (CUresult rc =
          ResolveSide(c.dstMemoryType, c.dstHost, c.dstDevice, c.dstArray, c.dstPitch, c.dstHeight,
                      c.dstXInBytes, c.dstY, c.dstZ, c.WidthInBytes, rows, depth, &dst);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  if (c.WidthInBytes == 0) return CUDA_SUCCESS;
  for (size_t z = 0; z < depth; ++z) {
    for (size_t y = 0; y < rows; ++y) {
      const uint8_t* s =
          src.base + ((c.srcZ + z) * src.height + c.srcY + y) * src.pitch + c.srcXInBytes;
      uint8_t* d = dst.base + ((c.dstZ + z) * dst.height + c.dstY + y) * dst.pitch + c.dstXInBytes;
      std::memmove(d, s, c.WidthInBytes);
    }
  }
  return CUDA_SUCCESS;
}

CUresult MemsetLocked(uintptr_t dst, size_t pitch, unsigned value, unsigned elem_size, size_t width,
                      size_t height) {
  if (elem_size != 1 && elem_size != 2 && elem_size != 4) return CUDA_ERROR_INVALID_VALUE;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  size_t row = width * elem_size;
  if (height > 1 && pitch < row) return CUDA_ERROR_INVALID_VALUE;
  if (height == 1) pitch = row;
  if (elem_size > 1 && dst % elem_size != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = CheckRangeLocked(dst, (height - 1) * pitch + row); rc != CUDA_SUCCESS) {
    return rc;
  }
  for (size_t y = 0; y < height; ++y) {
    uint8_t* p = reinterpret_cast<uint8_t*>(dst + y * pitch);
    if (elem_size == 1) {
      std::memset(p, static_cast<int>(value & 0xff), row);
    } else if (elem_size == 2) {
      auto v = static_cast<uint16_t>(value);
      for (size_t i = 0; i < width; ++i) std::memcpy(p + 2 * i, &v, 2);
    } else {
      auto v = static_cast<uint32_t>(value);
      for (size_t i = 0; i < width; ++i) std::memcpy(p + 4 * i, &v, 4);
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace vgpu::simgpu::driver
