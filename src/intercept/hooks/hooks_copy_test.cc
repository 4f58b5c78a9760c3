// The copy hooks: without a cap a copy reaches the driver as one call; with a cap it is cut into
// chunks that reach the driver in order, on the caller's stream, covering the copy exactly once
// (the sequence checks), at the cap's rate on a synthetic clock; directions are told apart.
#include <gtest/gtest.h>

#include <vector>

#include "intercept/config/copy_config.h"
#include "intercept/fake_driver.h"
#include "intercept/hooks/hooks.h"
#include "intercept/runtime.h"

namespace vgpu::intercept {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;

struct Call {
  int kind;  // 0 HtoD, 1 DtoH, 2 unified, 3 2D, 4 3D, 5 peer
  uint64_t dst, src, bytes;
  CUstream stream;
  size_t y = 0, rows = 0;
};
std::vector<Call> g_calls;
uint64_t g_now = 0;
uint64_t FakeNow() { return g_now; }
void FakeSleep(uint64_t until) {
  if (until > g_now) g_now = until;
}
constexpr uint64_t kHostBase = 0x100000000ULL;  // addresses below are "host" for the fake

CUresult HtoDAsync(CUdeviceptr d, const void* s, size_t n, CUstream st) {
  g_calls.push_back({0, d, reinterpret_cast<uint64_t>(s), n, st});
  return CUDA_SUCCESS;
}
CUresult HtoD(CUdeviceptr d, const void* s, size_t n) { return HtoDAsync(d, s, n, nullptr); }
CUresult DtoHAsync(void* d, CUdeviceptr s, size_t n, CUstream st) {
  g_calls.push_back({1, reinterpret_cast<uint64_t>(d), s, n, st});
  return CUDA_SUCCESS;
}
CUresult UnifiedAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  g_calls.push_back({2, d, s, n, st});
  return CUDA_SUCCESS;
}
CUresult Copy2DAsync(const CUDA_MEMCPY2D* c, CUstream st) {
  g_calls.push_back({3, c->dstDevice, reinterpret_cast<uint64_t>(c->srcHost),
                     c->WidthInBytes * c->Height, st, c->srcY, c->Height});
  if (c->dstY != c->srcY) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
CUresult Copy3D(const CUDA_MEMCPY3D* c) {
  g_calls.push_back({4, c->dstDevice, c->srcDevice, c->WidthInBytes * c->Height * c->Depth, nullptr,
                     c->srcZ, c->Depth});
  return CUDA_SUCCESS;
}
CUresult Peer(CUdeviceptr d, CUcontext, CUdeviceptr s, CUcontext, size_t n) {
  g_calls.push_back({5, d, s, n, nullptr});
  return CUDA_SUCCESS;
}
CUresult PointerType(void* data, CUpointer_attribute attr, CUdeviceptr p) {
  if (attr != CU_POINTER_ATTRIBUTE_MEMORY_TYPE) return CUDA_ERROR_INVALID_VALUE;
  if (p < kHostBase) return CUDA_ERROR_INVALID_VALUE;  // pageable memory the driver never saw
  *static_cast<unsigned*>(data) = CU_MEMORYTYPE_DEVICE;
  return CUDA_SUCCESS;
}

CUresult Batch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
               CUmemcpyAttributes*, size_t*, size_t, CUstream st) {
  for (size_t i = 0; i < count; ++i) g_calls.push_back({6, dsts[i], srcs[i], sizes[i], st});
  return CUDA_SUCCESS;
}

// A graph of three nodes: memcpy, kernel, memcpy.
CUresult GraphGetNodes(CUgraph, CUgraphNode* nodes, size_t* count) {
  if (nodes != nullptr) {
    for (size_t i = 0; i < 3 && i < *count; ++i) nodes[i] = reinterpret_cast<CUgraphNode>(i + 1);
  }
  *count = 3;
  return CUDA_SUCCESS;
}
CUresult GraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  *type = reinterpret_cast<uintptr_t>(node) == 2 ? CU_GRAPH_NODE_TYPE_KERNEL
                                                 : CU_GRAPH_NODE_TYPE_MEMCPY;
  return CUDA_SUCCESS;
}
CUresult GraphAllocParams(CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS*) {
  return CUDA_ERROR_INVALID_VALUE;
}
CUresult GraphInstantiate(CUgraphExec* exec, CUgraph, unsigned long long) {
  *exec = reinterpret_cast<CUgraphExec>(0x6a);
  return CUDA_SUCCESS;
}

class CopyHooks : public ::testing::Test {
 protected:
  void Install(uint64_t h2d, uint64_t d2h) {
    DriverApi cuda = testing::MakeFakeDriver();
    cuda.cuMemcpyHtoDAsync_v2 = HtoDAsync;
    cuda.cuMemcpyHtoD_v2 = HtoD;
    cuda.cuMemcpyDtoHAsync_v2 = DtoHAsync;
    cuda.cuMemcpyAsync = UnifiedAsync;
    cuda.cuMemcpy2DAsync_v2 = Copy2DAsync;
    cuda.cuMemcpy3D_v2 = Copy3D;
    cuda.cuMemcpyPeer = Peer;
    cuda.cuPointerGetAttribute = PointerType;
    cuda.cuMemcpyBatchAsync_v2 = Batch;
    cuda.cuGraphGetNodes = GraphGetNodes;
    cuda.cuGraphNodeGetType = GraphNodeGetType;
    cuda.cuGraphMemAllocNodeGetParams = GraphAllocParams;
    cuda.cuGraphInstantiateWithFlags = GraphInstantiate;
    Config config;
    config.copy_rate[0] = h2d;
    config.copy_rate[1] = d2h;
    config.copy_paced = h2d != 0 || d2h != 0;
    config.copy_burst_ns = 0;
    config.copy_chunk_bytes = 4 * kMiB;
    InstallForTest(cuda, testing::MakeFakeNvml(), config, nullptr, false);
    GetRuntime().copy.SetClockForTest(FakeNow, FakeSleep);
    g_calls.clear();
    g_now = 1'000'000'000'000ULL;
  }
  shm::CopyQosState& State() { return GetRuntime().accountant.region()->header.copy; }
  CUstream stream_ = reinterpret_cast<CUstream>(0x5eed);
  CUdeviceptr dev_ = kHostBase + 0x1000000;
  std::vector<char> host_ = std::vector<char>(10 * kMiB);
};

TEST_F(CopyHooks, WithoutACapACopyIsOneCall) {
  Install(0, 0);
  ASSERT_EQ(cuMemcpyHtoDAsync_v2(dev_, host_.data(), 10 * kMiB, stream_), CUDA_SUCCESS);
  ASSERT_EQ(g_calls.size(), 1u);
  EXPECT_EQ(g_calls[0].bytes, 10 * kMiB);
  EXPECT_EQ(State().dir[0].calls, 0u);
}

TEST_F(CopyHooks, ChunksKeepStreamOrderAndCoverTheCopyOnce) {
  Install(1'000'000'000, 0);
  const uint64_t t0 = g_now;
  // Two copies on one stream, then a third: every chunk in order, contiguous, on that stream.
  for (int copy = 0; copy < 3; ++copy) {
    ASSERT_EQ(cuMemcpyHtoDAsync_v2(dev_ + copy * 10 * kMiB, host_.data(), 10 * kMiB, stream_),
              CUDA_SUCCESS);
  }
  ASSERT_EQ(g_calls.size(), 9u);  // 4 + 4 + 2 MiB per copy
  uint64_t expect_dst = dev_;
  for (const Call& c : g_calls) {
    EXPECT_EQ(c.kind, 0);
    EXPECT_EQ(c.stream, stream_);
    EXPECT_EQ(c.dst, expect_dst) << "a chunk out of order or missing";
    EXPECT_EQ(c.src - reinterpret_cast<uint64_t>(host_.data()), (c.dst - dev_) % (10 * kMiB));
    expect_dst += c.bytes;
  }
  EXPECT_EQ(expect_dst, dev_ + 30 * kMiB);
  // 30 MiB at 1 GB/s: the last chunk may go after 28 MiB have been paid for.
  EXPECT_NEAR(static_cast<double>(g_now - t0), 28.0 * kMiB, 1e3);
  EXPECT_EQ(State().dir[0].paced_bytes, 30 * kMiB);
  EXPECT_EQ(State().dir[0].calls, 3u);
}

TEST_F(CopyHooks, DirectionsArePacedApart) {
  Install(1'000'000'000, 0);
  ASSERT_EQ(cuMemcpyDtoHAsync_v2(host_.data(), dev_, 10 * kMiB, stream_), CUDA_SUCCESS);
  EXPECT_EQ(g_calls.size(), 1u);  // no D2H cap
  g_calls.clear();
  // Unified: pageable source (unknown to the driver) to device memory is host-to-device.
  ASSERT_EQ(cuMemcpyAsync(dev_, reinterpret_cast<CUdeviceptr>(host_.data()) & 0xffffffu, 10 * kMiB,
                          stream_),
            CUDA_SUCCESS);
  EXPECT_EQ(g_calls.size(), 3u);
  g_calls.clear();
  // Device to device (both known to the driver): not on the host link.
  ASSERT_EQ(cuMemcpyAsync(dev_, dev_ + 64 * kMiB, 10 * kMiB, stream_), CUDA_SUCCESS);
  EXPECT_EQ(g_calls.size(), 1u);
  g_calls.clear();
  ASSERT_EQ(cuMemcpyPeer(dev_, nullptr, dev_ + kMiB, nullptr, 5 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(g_calls.size(), 1u);
  EXPECT_EQ(State().peer_bytes, 5 * kMiB);
}

TEST_F(CopyHooks, TwoDimensionalCopiesGoByRowsThreeDimensionalBySlices) {
  Install(1'000'000'000, 1'000'000'000);
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = host_.data();
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = dev_;
  c.WidthInBytes = kMiB;
  c.Height = 10;
  c.srcY = c.dstY = 3;
  ASSERT_EQ(cuMemcpy2DAsync_v2(&c, stream_), CUDA_SUCCESS);
  ASSERT_EQ(g_calls.size(), 3u);
  size_t y = 3;
  for (const Call& call : g_calls) {
    EXPECT_EQ(call.y, y);
    y += call.rows;
  }
  EXPECT_EQ(y, 13u);
  g_calls.clear();
  CUDA_MEMCPY3D d{};
  d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  d.srcDevice = dev_;
  d.dstMemoryType = CU_MEMORYTYPE_HOST;
  d.dstHost = host_.data();
  d.WidthInBytes = kMiB;
  d.Height = 2;
  d.Depth = 5;  // 2 MiB slices, 2 per chunk
  ASSERT_EQ(cuMemcpy3D_v2(&d), CUDA_SUCCESS);
  ASSERT_EQ(g_calls.size(), 3u);
  EXPECT_EQ(g_calls[0].y, 0u);
  EXPECT_EQ(g_calls[1].y, 2u);
  EXPECT_EQ(g_calls[2].y, 4u);
  EXPECT_EQ(g_calls[2].rows, 1u);
  EXPECT_EQ(State().dir[1].paced_bytes, 10 * kMiB);
}

TEST_F(CopyHooks, AChunkTheDriverRefusesEndsTheCopy) {
  Install(1'000'000'000, 0);
  CUDA_MEMCPY2D c{};
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = host_.data();
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = dev_;
  c.WidthInBytes = kMiB;
  c.Height = 10;
  c.srcY = 0;
  c.dstY = 1;  // the fake refuses rows that do not line up
  EXPECT_EQ(cuMemcpy2DAsync_v2(&c, stream_), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(g_calls.size(), 1u);
}

TEST_F(CopyHooks, BatchesDrawTheirHostLinkBytesFirstAndStayOneCall) {
  Install(1'000'000'000, 0);
  const uint64_t t0 = g_now;
  CUdeviceptr host = reinterpret_cast<CUdeviceptr>(host_.data()) & 0xffffffu;  // pageable
  CUdeviceptr dsts[3] = {dev_, dev_ + 8 * kMiB, host};
  CUdeviceptr srcs[3] = {host, host, dev_};
  size_t sizes[3] = {8 * kMiB, 8 * kMiB, 8 * kMiB};
  ASSERT_EQ(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, nullptr, nullptr, 0, stream_),
            CUDA_SUCCESS);
  ASSERT_EQ(g_calls.size(), 3u);  // one driver call, in the caller's order
  EXPECT_EQ(g_calls[0].dst, dev_);
  EXPECT_EQ(g_calls[2].dst, host);
  EXPECT_EQ(State().dir[0].paced_bytes, 16 * kMiB);                // the D2H one has no cap
  EXPECT_NEAR(static_cast<double>(g_now - t0), 12.0 * kMiB, 1e3);  // the last 4 MiB chunk
}

TEST_F(CopyHooks, GraphMemcpyNodesAreCountedAsUnpaced) {
  Install(0, 0);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, reinterpret_cast<CUgraph>(0x9), 0), CUDA_SUCCESS);
  EXPECT_EQ(State().unpaced_graph_copies, 0u);  // no cap: nothing is counted
  Install(1'000'000'000, 0);
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, reinterpret_cast<CUgraph>(0x9), 0), CUDA_SUCCESS);
  EXPECT_EQ(State().unpaced_graph_copies, 2u);
}

}  // namespace
}  // namespace vgpu::intercept
