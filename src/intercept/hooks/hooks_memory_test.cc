// Every linear and VMM allocation path: a slice of N bytes holds N bytes and not one byte more,
// the refused call never reaches the driver, frees give back exactly what was charged, and no
// counter can underflow.
#include <gtest/gtest.h>

#include "intercept/fake_driver.h"
#include "intercept/hooks/hooks.h"
#include "intercept/runtime.h"

namespace vgpu::intercept {
namespace {

using testing::Fake;
using testing::InstallFake;
using testing::SliceUsed;

constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kLimit = 64 * kMiB;

class MemoryHooks : public ::testing::Test {
 protected:
  void SetUp() override { InstallFake(kLimit); }
};

TEST_F(MemoryHooks, MemAllocHoldsTheLimitAndNotOneByteMore) {
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAlloc_v2(&a, kLimit), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kLimit);
  int calls = Fake().calls;
  EXPECT_EQ(cuMemAlloc_v2(&b, 1), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(Fake().calls, calls) << "a refused allocation must not reach the driver";
  EXPECT_EQ(b, 0u);
  ASSERT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
  EXPECT_EQ(cuMemAlloc_v2(&b, 1), CUDA_SUCCESS);
}

TEST_F(MemoryHooks, ManySmallAllocationsFillTheSliceExactly) {
  std::vector<CUdeviceptr> ptrs;
  for (uint64_t i = 0; i < kLimit / (4096 * 3); ++i) {
    CUdeviceptr p = 0;
    ASSERT_EQ(cuMemAlloc_v2(&p, 4096 * 3), CUDA_SUCCESS);
    ptrs.push_back(p);
  }
  uint64_t rest = kLimit - SliceUsed();
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc_v2(&p, rest), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc_v2(&p, 1), CUDA_ERROR_OUT_OF_MEMORY);
  for (CUdeviceptr q : ptrs) ASSERT_EQ(cuMemFree_v2(q), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), rest);
}

TEST_F(MemoryHooks, DriverFailureRollsTheChargeBack) {
  Fake().fail_next = true;
  CUdeviceptr a = 0;
  EXPECT_EQ(cuMemAlloc_v2(&a, kMiB), CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(MemoryHooks, UnknownAndDoubleFreesNeverUnderflow) {
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAlloc_v2(&a, kMiB), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(0x1234), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SliceUsed(), kMiB);
  ASSERT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(SliceUsed(), 0u);
  EXPECT_EQ(cuMemAlloc_v2(&a, kLimit), CUDA_SUCCESS);
}

TEST_F(MemoryHooks, InvalidCallsPassThroughUncharged) {
  CUdeviceptr a = 0;
  Fake().has_context = false;
  EXPECT_NE(cuMemAlloc_v2(&a, kMiB), CUDA_SUCCESS);  // the driver reports the missing context
  Fake().has_context = true;
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(MemoryHooks, LegacyEntryPointsAreCountedToo) {
  CUdeviceptr_v1 a = 0, b = 0;
  ASSERT_EQ(cuMemAlloc(&a, kLimit - 1), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc(&b, 2), CUDA_ERROR_OUT_OF_MEMORY);
  CUdeviceptr c = 0;
  EXPECT_EQ(cuMemAlloc_v2(&c, 2), CUDA_ERROR_OUT_OF_MEMORY);
  unsigned int free = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, kLimit);
  EXPECT_EQ(free, 1u);
  ASSERT_EQ(cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(MemoryHooks, ManagedMemoryIsCounted) {
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocManaged(&a, kLimit, 1), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAllocManaged(&b, 1, 1), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemAlloc_v2(&b, 1), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(MemoryHooks, PitchIsChargedAsRealPitchTimesHeight) {
  // 1000-byte rows are padded to 1024: 64 rows of 1 KiB fill 64 KiB exactly.
  InstallFake(64 * 1024);
  Fake().pitch_alignment = 1024;
  CUdeviceptr a = 0, b = 0;
  size_t pitch = 0;
  ASSERT_EQ(cuMemAllocPitch_v2(&a, &pitch, 1000, 64, 4), CUDA_SUCCESS);
  EXPECT_EQ(pitch, 1024u);
  EXPECT_EQ(SliceUsed(), 64u * 1024);
  EXPECT_EQ(cuMemAllocPitch_v2(&b, &pitch, 1, 1, 4), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(MemoryHooks, PitchLargerThanTheEstimateIsSettledOrRefused) {
  InstallFake(64 * 1024);
  Fake().pitch_alignment = 2048;  // more than the 512-byte estimate
  CUdeviceptr a = 0;
  size_t pitch = 0;
  ASSERT_EQ(cuMemAllocPitch_v2(&a, &pitch, 100, 32, 4), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 2048u * 32);
  ASSERT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
  // 33 rows of 2 KiB do not fit in 64 KiB: the driver allocated, then it is freed and refused.
  EXPECT_EQ(cuMemAllocPitch_v2(&a, &pitch, 100, 33, 4), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(SliceUsed(), 0u);
  EXPECT_EQ(Fake().used[0], 0u) << "nothing may stay allocated after a refusal";
}

TEST_F(MemoryHooks, VmmDeviceMemoryIsCountedHostMemoryIsNot) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle h = 0, h2 = 0;
  ASSERT_EQ(cuMemCreate(&h, kLimit, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemCreate(&h2, 1, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  CUmemAllocationProp host = prop;
  host.location.type = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_EQ(cuMemCreate(&h2, 10 * kLimit, &host, 0), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kLimit);
  EXPECT_EQ(cuMemRelease(h2), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kLimit);
  ASSERT_EQ(cuMemRelease(h), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(MemoryHooks, VmmOnADeviceBeyondTheAccountedRangeIsRefusedUnderALimit) {
  CUmemAllocationProp prop{};
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 40;
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(cuMemCreate(&h, 1, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
}

TEST_F(MemoryHooks, LimitsArePerDevice) {
  InstallFake(kLimit, 0, 2 * kLimit);
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAlloc_v2(&a, kLimit), CUDA_SUCCESS);
  Fake().current_device = 1;
  ASSERT_EQ(cuMemAlloc_v2(&a, 2 * kLimit), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc_v2(&a, 1), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(SliceUsed(0), kLimit);
  EXPECT_EQ(SliceUsed(1), 2 * kLimit);
}

TEST_F(MemoryHooks, NoLimitMeansCountedButNeverRefused) {
  InstallFake(kNoLimit);
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAlloc_v2(&a, 10ULL << 30), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 10ULL << 30);
}

TEST_F(MemoryHooks, ConcurrentThreadsNeverExceedTheLimit) {
  constexpr int kThreads = 8;
  std::atomic<uint64_t> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        CUdeviceptr p = 0;
        uint64_t size = (1 + (i + t) % 7) * 64 * 1024;
        if (cuMemAlloc_v2(&p, size) == CUDA_SUCCESS) granted += size;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(granted.load(), kLimit);
  EXPECT_EQ(granted.load(), SliceUsed());
}

}  // namespace
}  // namespace vgpu::intercept
