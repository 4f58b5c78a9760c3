#include "intercept/memory/array_size.h"

namespace vgpu::intercept {
namespace {

using namespace ::vgpu::cuda;

constexpr uint64_t kSaturated = ~0ULL;

uint64_t Mul(uint64_t a, uint64_t b) {
  unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return r > kSaturated ? kSaturated : static_cast<uint64_t>(r);
}

uint64_t Add(uint64_t a, uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

struct FormatSize {
  enum Kind { kPerChannel, kFixed, kBitsPerPixel, kBlock } kind;
  uint64_t value;  // bytes per channel / bytes per texel / bits per pixel / bytes per 4x4 block
};

FormatSize SizeOf(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return {FormatSize::kPerChannel, 1};
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return {FormatSize::kPerChannel, 2};
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return {FormatSize::kPerChannel, 4};
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
      return {FormatSize::kFixed, 1};
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
    case CU_AD_FORMAT_YUY2:
      return {FormatSize::kFixed, 2};
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
    case CU_AD_FORMAT_Y210:
    case CU_AD_FORMAT_Y216:
    case CU_AD_FORMAT_AYUV:
    case CU_AD_FORMAT_Y410:
      return {FormatSize::kFixed, 4};
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
    case CU_AD_FORMAT_Y416:
      return {FormatSize::kFixed, 8};
    case CU_AD_FORMAT_NV12:
      return {FormatSize::kBitsPerPixel, 12};
    case CU_AD_FORMAT_NV16:
      return {FormatSize::kBitsPerPixel, 16};
    case CU_AD_FORMAT_P010:
    case CU_AD_FORMAT_P016:
    case CU_AD_FORMAT_Y444_PLANAR8:
    case CU_AD_FORMAT_YUV444_8bit_SemiPlanar:
      return {FormatSize::kBitsPerPixel, 24};
    case CU_AD_FORMAT_P210:
    case CU_AD_FORMAT_P216:
      return {FormatSize::kBitsPerPixel, 32};
    case CU_AD_FORMAT_Y444_PLANAR10:
    case CU_AD_FORMAT_YUV444_16bit_SemiPlanar:
      return {FormatSize::kBitsPerPixel, 48};
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
      return {FormatSize::kBlock, 8};
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
      return {FormatSize::kBlock, 16};
    default:
      return {FormatSize::kPerChannel, 16};
  }
}

}  // namespace

uint64_t ArrayLevelBytes(CUarray_format format, unsigned int channels, uint64_t width,
                         uint64_t height, uint64_t depth) {
  uint64_t h = height == 0 ? 1 : height;
  uint64_t d = depth == 0 ? 1 : depth;
  FormatSize f = SizeOf(format);
  switch (f.kind) {
    case FormatSize::kPerChannel:
      return Mul(Mul(Mul(width, h), d), Mul(f.value, channels == 0 ? 1 : channels));
    case FormatSize::kFixed:
      return Mul(Mul(Mul(width, h), d), f.value);
    case FormatSize::kBitsPerPixel:
      return Mul(CeilDiv(Mul(Mul(width, h), f.value), 8), d);
    case FormatSize::kBlock:
      return Mul(Mul(Mul(CeilDiv(width, 4), CeilDiv(h, 4)), d), f.value);
  }
  return kSaturated;
}

uint64_t ArrayBytes(const CUDA_ARRAY_DESCRIPTOR& desc) {
  return ArrayLevelBytes(desc.Format, desc.NumChannels, desc.Width, desc.Height, 0);
}

uint64_t Array3DBytes(const CUDA_ARRAY3D_DESCRIPTOR& desc) {
  return ArrayLevelBytes(desc.Format, desc.NumChannels, desc.Width, desc.Height, desc.Depth);
}

uint64_t MipmappedArrayBytes(const CUDA_ARRAY3D_DESCRIPTOR& desc, unsigned int levels) {
  bool keep_depth = (desc.Flags & (kArray3DLayered | kArray3DCubemap)) != 0;
  uint64_t total = 0;
  uint64_t w = desc.Width, h = desc.Height, d = desc.Depth;
  if (levels == 0) levels = 1;
  for (unsigned int l = 0; l < levels && l < 64; ++l) {
    total = Add(total, ArrayLevelBytes(desc.Format, desc.NumChannels, w, h, d));
    w = w > 1 ? w / 2 : 1;
    if (h != 0) h = h > 1 ? h / 2 : 1;
    if (d != 0 && !keep_depth) d = d > 1 ? d / 2 : 1;
  }
  return total;
}

}  // namespace vgpu::intercept
