// Pool memory released by the driver at synchronizations (pool_tracker.h): after cuMemFreeAsync
// and a stream, event or context synchronize, memory above the pool's release threshold is no
// longer charged; a raised threshold keeps its reserve charged.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "intercept/fake_driver.h"
#include "intercept/hooks/hooks.h"
#include "intercept/runtime.h"

namespace vgpu::intercept {
namespace {

using testing::Fake;
using testing::FakeDefaultPool;
using testing::InstallFake;
using testing::SliceUsed;

constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kLimit = 512 * kMiB;
const CUstream kStream = nullptr;

struct Sync {
  std::string name;
  std::function<CUresult()> call;
};

std::vector<Sync> AllSyncs() {
  return {
      {"cuStreamSynchronize", [] { return cuStreamSynchronize(kStream); }},
      {"cuStreamSynchronize_ptsz", [] { return cuStreamSynchronize_ptsz(kStream); }},
      {"cuEventSynchronize", [] { return cuEventSynchronize(reinterpret_cast<CUevent>(&Fake())); }},
      {"cuCtxSynchronize", [] { return cuCtxSynchronize(); }},
      {"cuCtxSynchronize_v2", [] { return cuCtxSynchronize_v2(nullptr); }},
  };
}

CUmemoryPool CreatePool() {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr;
  EXPECT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  return pool;
}

class PoolRelease : public ::testing::Test {
 protected:
  void SetUp() override { InstallFake(kLimit); }
};

TEST_F(PoolRelease, DefaultPoolMemoryIsUsableAgainAfterEverySynchronization) {
  for (const Sync& sync : AllSyncs()) {
    SCOPED_TRACE(sync.name);
    InstallFake(kLimit);
    CUdeviceptr a = 0, b = 0;
    ASSERT_EQ(cuMemAllocAsync(&a, 256 * kMiB, kStream), CUDA_SUCCESS);
    ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
    // Until the synchronization the driver keeps the memory reserved: still charged.
    EXPECT_EQ(SliceUsed(), 256 * kMiB);
    int before = Fake().synchronizations;
    ASSERT_EQ(sync.call(), CUDA_SUCCESS);
    EXPECT_EQ(Fake().synchronizations, before + 1) << "the hook must call the driver";
    EXPECT_EQ(Fake().pools[FakeDefaultPool(0)].reserved, 0u);
    EXPECT_EQ(SliceUsed(), 0u);
    // The whole slice is usable again.
    ASSERT_EQ(cuMemAlloc_v2(&b, kLimit), CUDA_SUCCESS);
    ASSERT_EQ(cuMemFree_v2(b), CUDA_SUCCESS);
  }
}

TEST_F(PoolRelease, ExplicitPoolWithThresholdZeroIsReleasedAtSynchronization) {
  CUmemoryPool pool = CreatePool();
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 256 * kMiB, pool, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 256 * kMiB);
  ASSERT_EQ(cuStreamSynchronize(kStream), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
  ASSERT_EQ(cuMemAllocAsync(&b, kLimit, kStream), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kLimit);
}

TEST_F(PoolRelease, LiveAllocationsStayChargedAcrossSynchronizations) {
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, 100 * kMiB, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&b, 100 * kMiB, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 100 * kMiB);
  CUdeviceptr c = 0;
  EXPECT_EQ(cuMemAlloc_v2(&c, kLimit - 100 * kMiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMemAlloc_v2(&c, kLimit - 100 * kMiB), CUDA_SUCCESS);
}

TEST_F(PoolRelease, RaisedThresholdKeepsItsReserveCharged) {
  CUmemoryPool pool = CreatePool();
  // cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, UINT64_MAX) on the fake.
  Fake().pools[pool].release_threshold = ~0ULL;
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 256 * kMiB, pool, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
  for (const Sync& sync : AllSyncs()) ASSERT_EQ(sync.call(), CUDA_SUCCESS) << sync.name;
  EXPECT_EQ(Fake().pools[pool].reserved, 256 * kMiB);
  EXPECT_EQ(SliceUsed(), 256 * kMiB) << "memory the pool keeps stays charged";
  EXPECT_EQ(cuMemAlloc_v2(&b, 256 * kMiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
  // The pool reuses its reserve without a new charge.
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 256 * kMiB, pool, kStream), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 256 * kMiB);
}

TEST_F(PoolRelease, PartialThresholdKeepsExactlyThatMuch) {
  CUmemoryPool pool = CreatePool();
  Fake().pools[pool].release_threshold = 64 * kMiB;
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 256 * kMiB, pool, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuEventSynchronize(reinterpret_cast<CUevent>(&Fake())), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 64 * kMiB);
  EXPECT_EQ(cuMemAlloc_v2(&b, kLimit - 64 * kMiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMemAlloc_v2(&b, kLimit - 64 * kMiB), CUDA_SUCCESS);
}

TEST_F(PoolRelease, AllocationThatWouldBeRefusedSeesMemoryTheDriverReleasedUnseen) {
  // The driver released the pool at a synchronization libvgpu did not see (one made inside the
  // driver, or by the compute gate's own event waits): the next allocation that would not fit
  // reconciles the pools before refusing.
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, 256 * kMiB, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
  ASSERT_EQ(GetRuntime().config.memory_limit[0], kLimit);
  ASSERT_EQ(Fake().pools[FakeDefaultPool(0)].reserved, 256 * kMiB);
  Fake().pools[FakeDefaultPool(0)].reserved = 0;  // the driver gave the memory back
  Fake().used[0] = 0;
  EXPECT_EQ(SliceUsed(), 256 * kMiB);
  ASSERT_EQ(cuMemAlloc_v2(&b, kLimit), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kLimit);
  ASSERT_EQ(cuMemFree_v2(b), CUDA_SUCCESS);
  // The same for a pool allocation.
  ASSERT_EQ(cuMemAllocAsync(&a, 256 * kMiB, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
  CUmemoryPool pool = CreatePool();
  Fake().pools[FakeDefaultPool(0)].reserved = 0;
  Fake().used[0] = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&b, kLimit, pool, kStream), CUDA_SUCCESS);
}

TEST_F(PoolRelease, SynchronizationWithoutSparePoolsQueriesNoPool) {
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, 4 * kMiB, kStream), CUDA_SUCCESS);
  EXPECT_FALSE(GetRuntime().pools.HasSpare());
  ASSERT_EQ(cuStreamSynchronize(kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
  EXPECT_TRUE(GetRuntime().pools.HasSpare());
  ASSERT_EQ(cuStreamSynchronize(kStream), CUDA_SUCCESS);
  EXPECT_FALSE(GetRuntime().pools.HasSpare());
  EXPECT_EQ(SliceUsed(), 0u);
}

}  // namespace
}  // namespace vgpu::intercept
