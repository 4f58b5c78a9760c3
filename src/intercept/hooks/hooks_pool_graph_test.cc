// Stream-ordered allocation, memory pools, arrays and graph memory nodes.
#include <gtest/gtest.h>

#include "intercept/fake_driver.h"
#include "intercept/hooks/hooks.h"
#include "intercept/memory/array_size.h"
#include "intercept/runtime.h"

namespace vgpu::intercept {
namespace {

using testing::Fake;
using testing::FakeDefaultPool;
using testing::FakeGraph;
using testing::InstallFake;
using testing::SliceUsed;

constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kLimit = 64 * kMiB;
const CUstream kStream = nullptr;

class PoolHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    InstallFake(kLimit);
    Fake().pool_chunk = 2 * kMiB;
  }
};

TEST_F(PoolHooks, AsyncAllocationsHoldTheLimitAndNotOneByteMore) {
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, kLimit, kStream), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kLimit);
  int calls = Fake().calls;
  EXPECT_EQ(cuMemAllocAsync(&b, 1, kStream), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemAllocAsync_ptsz(&b, 1, kStream), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemAlloc_v2(&b, 1), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(Fake().calls, calls);
  ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
  // The pool keeps its 64 MiB reserved until trimmed: still charged.
  EXPECT_EQ(SliceUsed(), kLimit);
  // ... but reusable by the same pool.
  ASSERT_EQ(cuMemAllocAsync(&b, kLimit, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync_ptsz(b, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPoolTrimTo(FakeDefaultPool(0), 0), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
  EXPECT_EQ(cuMemAlloc_v2(&b, kLimit), CUDA_SUCCESS);
}

TEST_F(PoolHooks, PoolGranularityIsChargedAsFarAsTheLimitAllows) {
  // A 1-byte allocation makes the pool reserve a 2 MiB chunk: that chunk is charged.
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, 1, kStream), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 2 * kMiB);
  CUdeviceptr b = 0;
  EXPECT_EQ(cuMemAlloc_v2(&b, kLimit - 2 * kMiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMemAlloc_v2(&b, kLimit - 2 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kLimit);
}

TEST_F(PoolHooks, MemFreeOfAnAsyncPointerGoesThroughItsPool) {
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, 4 * kMiB, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPoolTrimTo(FakeDefaultPool(0), 0), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(PoolHooks, ExplicitPoolsAreTrackedAndGiveBackOnDestroy) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, kLimit, pool, kStream), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAllocFromPoolAsync_ptsz(&b, 1, pool, kStream), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kLimit);  // reserved by the pool
  ASSERT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(PoolHooks, DestroyedPoolKeepsItsLiveBytesUntilFreed) {
  CUmemPoolProps props{};
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 8 * kMiB, pool, kStream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 8 * kMiB);
  ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(PoolHooks, HostPoolsAreNotCounted) {
  CUmemPoolProps props{};
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 10 * kLimit, pool, kStream), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
  ASSERT_EQ(cuMemFreeAsync(a, kStream), CUDA_SUCCESS);
}

TEST_F(PoolHooks, CapturedAllocationsAreLeftToTheGraph) {
  Fake().capturing = true;
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, 2 * kLimit, kStream), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(PoolHooks, FailedAsyncAllocationGivesItsChargeBack) {
  Fake().fail_next = true;
  CUdeviceptr a = 0;
  EXPECT_EQ(cuMemAllocAsync(&a, 4 * kMiB, kStream), CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(SliceUsed(), 0u);
}

class ArrayHooks : public ::testing::Test {
 protected:
  void SetUp() override { InstallFake(kLimit); }
};

TEST_F(ArrayHooks, Array2DHoldsTheLimitAndNotOneByteMore) {
  // 2048 x 2048 float4 = 64 MiB.
  CUDA_ARRAY_DESCRIPTOR d{2048, 2048, CU_AD_FORMAT_FLOAT, 4};
  ASSERT_EQ(ArrayBytes(d), kLimit);
  CUarray a = nullptr, b = nullptr;
  ASSERT_EQ(cuArrayCreate_v2(&a, &d), CUDA_SUCCESS);
  CUDA_ARRAY_DESCRIPTOR one{1, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1};
  int calls = Fake().calls;
  EXPECT_EQ(cuArrayCreate_v2(&b, &one), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(Fake().calls, calls);
  ASSERT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(ArrayHooks, Array3DAndLayeredHoldTheLimit) {
  CUDA_ARRAY3D_DESCRIPTOR d{256, 256, 128, CU_AD_FORMAT_HALF, 2, 0};  // 256*256*128*4 = 32 MiB
  CUarray a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(cuArray3DCreate_v2(&a, &d), CUDA_SUCCESS);
  d.Flags = kArray3DLayered;
  ASSERT_EQ(cuArray3DCreate_v2(&b, &d), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kLimit);
  CUDA_ARRAY3D_DESCRIPTOR one{1, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
  EXPECT_EQ(cuArray3DCreate_v2(&c, &one), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
  ASSERT_EQ(cuArrayDestroy(b), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(ArrayHooks, MipmappedArrayCountsEveryLevel) {
  // 2048 x 2048 RGBA8 with 2 levels: 16 MiB + 4 MiB.
  CUDA_ARRAY3D_DESCRIPTOR d{2048, 2048, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0};
  ASSERT_EQ(MipmappedArrayBytes(d, 2), 20 * kMiB);
  InstallFake(20 * kMiB);
  CUmipmappedArray m = nullptr, n = nullptr;
  ASSERT_EQ(cuMipmappedArrayCreate(&m, &d, 2), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 20 * kMiB);
  CUDA_ARRAY3D_DESCRIPTOR one{1, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
  EXPECT_EQ(cuMipmappedArrayCreate(&n, &one, 1), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(ArrayHooks, DriverPaddingIsChargedOrTheArrayRefused) {
  Fake().array_padding = 4096;
  CUDA_ARRAY_DESCRIPTOR d{1024, 1024, CU_AD_FORMAT_FLOAT, 4};  // 16 MiB + 4 KiB of padding
  CUarray a = nullptr;
  ASSERT_EQ(cuArrayCreate_v2(&a, &d), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 16 * kMiB + 4096);
  ASSERT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
  InstallFake(16 * kMiB);
  Fake().array_padding = 4096;
  EXPECT_EQ(cuArrayCreate_v2(&a, &d), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(SliceUsed(), 0u);
  EXPECT_EQ(Fake().used[0], 0u) << "the over-limit array must have been destroyed";
}

class GraphHooks : public ::testing::Test {
 protected:
  void SetUp() override { InstallFake(kLimit); }
  static CUDA_MEM_ALLOC_NODE_PARAMS Node(uint64_t bytes, int device = 0) {
    CUDA_MEM_ALLOC_NODE_PARAMS p{};
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = device;
    p.bytesize = bytes;
    return p;
  }
};

TEST_F(GraphHooks, InstantiationChargesAllocationNodesAndNotOneByteMore) {
  FakeGraph child;
  child.alloc_nodes.push_back(Node(16 * kMiB));
  FakeGraph graph;
  graph.alloc_nodes.push_back(Node(48 * kMiB));
  graph.children.push_back(&child);
  CUgraph g = reinterpret_cast<CUgraph>(&graph);
  CUgraphExec exec = nullptr, exec2 = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, g, 0), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kLimit);
  FakeGraph tiny;
  tiny.alloc_nodes.push_back(Node(1));
  int calls = Fake().calls;
  EXPECT_EQ(cuGraphInstantiateWithFlags(&exec2, reinterpret_cast<CUgraph>(&tiny), 0),
            CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuGraphInstantiate_v2(&exec2, reinterpret_cast<CUgraph>(&tiny), nullptr, nullptr, 0),
            CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuGraphInstantiate(&exec2, reinterpret_cast<CUgraph>(&tiny), nullptr, nullptr, 0),
            CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuGraphInstantiateWithParams(&exec2, reinterpret_cast<CUgraph>(&tiny), nullptr),
            CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(Fake().calls, calls);
  ASSERT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
  // A graph without allocation nodes costs nothing.
  FakeGraph empty;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec2, reinterpret_cast<CUgraph>(&empty), 0),
            CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST_F(GraphHooks, AddingANodeThatCannotFitIsRefused) {
  FakeGraph graph;
  CUgraphNode node = nullptr;
  CUDA_MEM_ALLOC_NODE_PARAMS too_big = Node(kLimit + 1);
  EXPECT_EQ(cuGraphAddMemAllocNode(&node, reinterpret_cast<CUgraph>(&graph), nullptr, 0, &too_big),
            CUDA_ERROR_OUT_OF_MEMORY);
  CUDA_MEM_ALLOC_NODE_PARAMS fits = Node(kLimit);
  EXPECT_EQ(cuGraphAddMemAllocNode(&node, reinterpret_cast<CUgraph>(&graph), nullptr, 0, &fits),
            CUDA_SUCCESS);
}

TEST_F(GraphHooks, FailedInstantiationGivesTheChargeBack) {
  FakeGraph graph;
  graph.alloc_nodes.push_back(Node(8 * kMiB));
  Fake().fail_next = true;
  CUgraphExec exec = nullptr;
  EXPECT_EQ(cuGraphInstantiateWithFlags(&exec, reinterpret_cast<CUgraph>(&graph), 0),
            CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(SliceUsed(), 0u);
}

}  // namespace
}  // namespace vgpu::intercept
