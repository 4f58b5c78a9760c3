#include "intercept/memory/array_size.h"

#include <gtest/gtest.h>

namespace vgpu::intercept {
namespace {

using namespace ::vgpu::cuda;

TEST(ArraySize, PerChannelFormats) {
  EXPECT_EQ(ArrayLevelBytes(CU_AD_FORMAT_UNSIGNED_INT8, 1, 100, 0, 0), 100u);
  EXPECT_EQ(ArrayLevelBytes(CU_AD_FORMAT_FLOAT, 4, 16, 16, 0), 16u * 16 * 16);
  EXPECT_EQ(ArrayLevelBytes(CU_AD_FORMAT_HALF, 2, 8, 8, 8), 8u * 8 * 8 * 4);
  EXPECT_EQ(ArrayLevelBytes(CU_AD_FORMAT_SIGNED_INT32, 1, 10, 10, 0), 400u);
}

TEST(ArraySize, FixedPackedPlanarAndBlockFormats) {
  EXPECT_EQ(ArrayLevelBytes(CU_AD_FORMAT_UNORM_INT8X4, 4, 10, 10, 0), 400u);  // channels implied
  EXPECT_EQ(ArrayLevelBytes(CU_AD_FORMAT_UNORM_INT16X4, 1, 10, 10, 0), 800u);
  EXPECT_EQ(ArrayLevelBytes(CU_AD_FORMAT_NV12, 1, 1920, 1080, 0), 1920u * 1080 * 3 / 2);
  EXPECT_EQ(ArrayLevelBytes(CU_AD_FORMAT_P010, 1, 64, 64, 0), 64u * 64 * 3);
  EXPECT_EQ(ArrayLevelBytes(CU_AD_FORMAT_BC1_UNORM, 4, 64, 64, 0), 16u * 16 * 8);
  EXPECT_EQ(ArrayLevelBytes(CU_AD_FORMAT_BC7_UNORM, 4, 65, 64, 0), 17u * 16 * 16);
}

TEST(ArraySize, UnknownFormatsAreOverestimated) {
  auto unknown = static_cast<CUarray_format>(0x77);
  EXPECT_GE(ArrayLevelBytes(unknown, 1, 100, 1, 0),
            ArrayLevelBytes(CU_AD_FORMAT_FLOAT, 4, 100, 1, 0));
}

TEST(ArraySize, OverflowSaturates) {
  EXPECT_EQ(ArrayLevelBytes(CU_AD_FORMAT_FLOAT, 4, ~0ULL, ~0ULL, 2), ~0ULL);
  CUDA_ARRAY3D_DESCRIPTOR d{~0ULL, ~0ULL, 0, CU_AD_FORMAT_FLOAT, 4, 0};
  EXPECT_EQ(MipmappedArrayBytes(d, 3), ~0ULL);
}

TEST(ArraySize, MipmapLevels) {
  CUDA_ARRAY3D_DESCRIPTOR d{8, 8, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
  EXPECT_EQ(MipmappedArrayBytes(d, 4), 64u + 16 + 4 + 1);
  CUDA_ARRAY3D_DESCRIPTOR one_d{8, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
  EXPECT_EQ(MipmappedArrayBytes(one_d, 4), 8u + 4 + 2 + 1);
  CUDA_ARRAY3D_DESCRIPTOR vol{8, 8, 8, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
  EXPECT_EQ(MipmappedArrayBytes(vol, 2), 512u + 64);
  CUDA_ARRAY3D_DESCRIPTOR layered{8, 8, 6, CU_AD_FORMAT_UNSIGNED_INT8, 1, kArray3DLayered};
  EXPECT_EQ(MipmappedArrayBytes(layered, 2), 6u * 64 + 6 * 16);
  CUDA_ARRAY3D_DESCRIPTOR cube{8, 8, 6, CU_AD_FORMAT_UNSIGNED_INT8, 1, kArray3DCubemap};
  EXPECT_EQ(MipmappedArrayBytes(cube, 2), 6u * 64 + 6 * 16);
}

}  // namespace
}  // namespace vgpu::intercept
