// Device bytes of CUDA arrays, from format, channels and extents.
//
// Texel sizes follow cuda.h's CUarray_format: per-channel formats (8/16/32-bit integers, half,
// float) take NumChannels channels; the *X1/X2/X4 and packed formats fix their own texel size;
// planar YUV formats are counted by their average bits per pixel (NV12: 12); block-compressed
// formats by 4x4 blocks (BC1/BC4: 8 bytes, the others 16). An unknown format is counted as 16
// bytes per channel (the widest texel), so that an estimate never falls short for lack of
// knowledge. The hooks then correct the estimate with the driver's own
// cuArrayGetMemoryRequirements when it reports more.
//
// Height 0 means a 1D array and depth 0 a 2D array. Layered and cubemap arrays keep their depth
// (layers, faces) on every mipmap level. Overflow saturates at UINT64_MAX (refused by any limit).
#pragma once

#include <cstdint>

#include "intercept/cuda_abi.h"

namespace vgpu::intercept {

// Bytes of one level of `width` x `height` x `depth` texels.
uint64_t ArrayLevelBytes(cuda::CUarray_format format, unsigned int channels, uint64_t width,
                         uint64_t height, uint64_t depth);

uint64_t ArrayBytes(const cuda::CUDA_ARRAY_DESCRIPTOR& desc);
uint64_t Array3DBytes(const cuda::CUDA_ARRAY3D_DESCRIPTOR& desc);
uint64_t MipmappedArrayBytes(const cuda::CUDA_ARRAY3D_DESCRIPTOR& desc, unsigned int levels);

}  // namespace vgpu::intercept
