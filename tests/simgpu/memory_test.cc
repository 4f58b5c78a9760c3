// Every allocation path of the simulated driver: what each takes from the device, that frees
// give it back, and that a device cannot be filled beyond its physical size.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "sim_test_util.h"

namespace vgpu::simgpu::testing {
namespace {

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call
#define EXPECT_CU(call) EXPECT_EQ((call), CUDA_SUCCESS) << #call

TEST(SimgpuMemory, MemAllocTakesTheSizeRoundedTo512AndFreeReturnsIt) {
  ScopedContext ctx;
  uint64_t before = UsedBytes();
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 1000));
  EXPECT_EQ(p % 512, 0u);
  EXPECT_EQ(UsedBytes() - before, 1024u);
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_CU(cuMemGetAddressRange(&base, &size, p + 10));
  EXPECT_EQ(base, p);
  EXPECT_EQ(size, 1000u);
  ASSERT_CU(cuMemFree(p));
  EXPECT_EQ(UsedBytes(), before);
  EXPECT_EQ(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);  // double free is refused
  EXPECT_EQ(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST(SimgpuMemory, PitchedAllocationTakesPitchTimesHeight) {
  ScopedContext ctx;
  uint64_t before = UsedBytes();
  CUdeviceptr p = 0;
  size_t pitch = 0;
  ASSERT_CU(cuMemAllocPitch(&p, &pitch, 1000, 10, 4));
  EXPECT_EQ(pitch, 1024u);
  EXPECT_EQ(UsedBytes() - before, 10240u);
  EXPECT_EQ(cuMemAllocPitch(&p, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFree(p));
  EXPECT_EQ(UsedBytes(), before);
}

TEST(SimgpuMemory, ManagedMemoryTakesDeviceMemoryOnlyWhereItsPagesAreResident) {
  ScopedContext ctx;
  uint64_t before = UsedBytes();
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAllocManaged(&p, 4 * kMiB, CU_MEM_ATTACH_GLOBAL));
  EXPECT_EQ(UsedBytes(), before) << "managed pages start on the host";
  std::memset(reinterpret_cast<void*>(p), 7, 4 * kMiB);
  unsigned managed = 0;
  ASSERT_CU(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
  EXPECT_EQ(managed, 1u);
  CUmemLocation loc{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  EXPECT_CU(cuMemAdvise(p, 4 * kMiB, CU_MEM_ADVISE_SET_READ_MOSTLY, loc));
  EXPECT_CU(cuMemPrefetchAsync(p, 4 * kMiB, loc, 0, nullptr));
  EXPECT_EQ(UsedBytes() - before, 4 * kMiB) << "two 2 MiB pages on the device";
  CUmemLocation host{CU_MEM_LOCATION_TYPE_HOST, 0};
  EXPECT_CU(cuMemPrefetchAsync(p, 2 * kMiB, host, 0, nullptr));
  EXPECT_EQ(UsedBytes() - before, 2 * kMiB);
  EXPECT_EQ(static_cast<unsigned char*>(reinterpret_cast<void*>(p))[4 * kMiB - 1], 7);
  ASSERT_CU(cuMemFree(p));
  EXPECT_EQ(UsedBytes(), before);
}

// sim_touch kernels on device 1 (1 GiB, an A100-like link of 25 GB/s, 20 us per fault).
class SimgpuManaged : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_CU(cuModuleLoadData(&module_, "not a real image"));
    ASSERT_CU(cuModuleGetFunction(&touch_, module_, "sim_touch"));
    ASSERT_CU(cuEventCreate(&start_, CU_EVENT_DEFAULT));
    ASSERT_CU(cuEventCreate(&stop_, CU_EVENT_DEFAULT));
  }
  void TearDown() override {
    EXPECT_CU(cuEventDestroy(start_));
    EXPECT_CU(cuEventDestroy(stop_));
    EXPECT_CU(cuModuleUnload(module_));
  }
  // Simulated milliseconds of a kernel of 100 us touching [p, p + bytes).
  float TouchMs(CUdeviceptr p, uint64_t bytes) {
    uint64_t ns = 100'000;
    void* args[] = {&ns, &p, &bytes};
    float ms = -1;
    if (cuEventRecord(start_, nullptr) != CUDA_SUCCESS ||
        cuLaunchKernel(touch_, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr) != CUDA_SUCCESS ||
        cuEventRecord(stop_, nullptr) != CUDA_SUCCESS ||
        cuEventSynchronize(stop_) != CUDA_SUCCESS ||
        cuEventElapsedTime(&ms, start_, stop_) != CUDA_SUCCESS) {
      return -1;
    }
    return ms;
  }

  ScopedContext ctx_{1};
  CUmodule module_ = nullptr;
  CUfunction touch_ = nullptr;
  CUevent start_ = nullptr, stop_ = nullptr;
};

TEST_F(SimgpuManaged, TouchedPagesFaultInOnceAndAreEvictedWhenTheDeviceFills) {
  uint64_t before = UsedBytes(1);
  CUdeviceptr m = 0;
  ASSERT_CU(cuMemAllocManaged(&m, 1536 * kMiB, CU_MEM_ATTACH_GLOBAL));
  // 256 pages fault in: 256 x (20 us + 2 MiB at 25 GB/s = 83.9 us) = 26.6 ms, then 0.1 ms.
  float first = TouchMs(m, 512 * kMiB);
  EXPECT_NEAR(first, 26.7, 1.0);
  EXPECT_EQ(UsedBytes(1) - before, 512 * kMiB);
  float again = TouchMs(m, 512 * kMiB);
  EXPECT_NEAR(again, 0.1, 0.05) << "resident pages cost only the kernel";
  // The whole 1.5 GiB does not fit in 1 GiB: the device fills, least recently used pages leave.
  float all = TouchMs(m, 1536 * kMiB);
  EXPECT_GT(all, 2 * first);
  EXPECT_EQ(UsedBytes(1), kDevice1Bytes);
  // Device memory wins: an allocation gets its memory, the managed pages shrink at the next touch.
  CUdeviceptr d = 0;
  ASSERT_CU(cuMemAlloc(&d, 256 * kMiB));
  TouchMs(m, 2 * kMiB);
  EXPECT_EQ(UsedBytes(1), kDevice1Bytes);
  ASSERT_CU(cuMemFree(d));
  ASSERT_CU(cuMemFree(m));
  EXPECT_EQ(UsedBytes(1), before);
}

TEST_F(SimgpuManaged, PagesPreferringTheDeviceAreNeverEvicted) {
  CUdeviceptr hot = 0, cold = 0;
  ASSERT_CU(cuMemAllocManaged(&hot, 512 * kMiB, CU_MEM_ATTACH_GLOBAL));
  ASSERT_CU(cuMemAllocManaged(&cold, 1024 * kMiB, CU_MEM_ATTACH_GLOBAL));
  CUmemLocation dev{CU_MEM_LOCATION_TYPE_DEVICE, 1};
  ASSERT_CU(cuMemAdvise(hot, 512 * kMiB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev));
  ASSERT_GT(TouchMs(hot, 512 * kMiB), 20);
  TouchMs(cold, 1024 * kMiB);  // more than what is left: cold pages evict each other
  EXPECT_NEAR(TouchMs(hot, 512 * kMiB), 0.1, 0.05) << "the preferred pages stayed";
  ASSERT_CU(cuMemFree(hot));
  ASSERT_CU(cuMemFree(cold));
}

TEST(SimgpuMemory, HostAllocationsAreNotDeviceMemory) {
  ScopedContext ctx;
  uint64_t before = UsedBytes();
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_CU(cuMemAllocHost(&a, 64 * kMiB));
  ASSERT_CU(cuMemHostAlloc(&b, 1000, CU_MEMHOSTALLOC_DEVICEMAP));
  EXPECT_EQ(UsedBytes(), before);
  std::memset(a, 1, 64 * kMiB);
  CUdeviceptr d = 0;
  ASSERT_CU(cuMemHostGetDevicePointer(&d, b, 0));
  EXPECT_EQ(d, reinterpret_cast<CUdeviceptr>(b));
  unsigned flags = 0;
  ASSERT_CU(cuMemHostGetFlags(&flags, b));
  EXPECT_EQ(flags, static_cast<unsigned>(CU_MEMHOSTALLOC_DEVICEMAP));
  ASSERT_CU(cuMemFreeHost(a));
  ASSERT_CU(cuMemFreeHost(b));
  EXPECT_EQ(cuMemFreeHost(b), CUDA_ERROR_INVALID_VALUE);

  std::vector<char> mine(8192);
  ASSERT_CU(cuMemHostRegister(mine.data(), mine.size(), CU_MEMHOSTREGISTER_DEVICEMAP));
  EXPECT_EQ(cuMemHostRegister(mine.data() + 8, 16, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  ASSERT_CU(cuMemHostGetDevicePointer(&d, mine.data() + 100, 0));
  EXPECT_EQ(d, reinterpret_cast<CUdeviceptr>(mine.data() + 100));
  EXPECT_EQ(UsedBytes(), before);
  EXPECT_EQ(cuMemFreeHost(mine.data()), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemHostUnregister(mine.data()));
  EXPECT_EQ(cuMemHostUnregister(mine.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

TEST(SimgpuMemory, VirtualMemoryManagementMapsRealAliasingMemory) {
  ScopedContext ctx;
  uint64_t before = UsedBytes();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  ASSERT_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  EXPECT_EQ(gran, 2 * kMiB);
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(cuMemCreate(&h, gran + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemCreate(&h, 2 * gran, &prop, 0));
  EXPECT_EQ(UsedBytes() - before, 2 * gran);

  CUdeviceptr va = 0;
  ASSERT_CU(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0));
  ASSERT_CU(cuMemMap(va, 2 * gran, 0, h, 0));
  ASSERT_CU(cuMemMap(va + 2 * gran, 2 * gran, 0, h, 0));  // the same memory twice
  // Not accessible until cuMemSetAccess.
  char c = 'x';
  EXPECT_EQ(cuMemcpyHtoD(va, &c, 1), CUDA_ERROR_INVALID_VALUE);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_CU(cuMemSetAccess(va, 4 * gran, &access, 1));
  const char msg[] = "through one mapping";
  ASSERT_CU(cuMemcpyHtoD(va + 100, msg, sizeof(msg)));
  char back[sizeof(msg)] = {};
  ASSERT_CU(cuMemcpyDtoH(back, va + 2 * gran + 100, sizeof(msg)));
  EXPECT_STREQ(back, msg);

  CUmemGenericAllocationHandle again = 0;
  ASSERT_CU(cuMemRetainAllocationHandle(&again, reinterpret_cast<void*>(va)));
  EXPECT_EQ(again, h);
  ASSERT_CU(cuMemRelease(again));
  // Released while mapped: the memory stays until the last mapping goes.
  ASSERT_CU(cuMemRelease(h));
  EXPECT_EQ(UsedBytes() - before, 2 * gran);
  ASSERT_CU(cuMemUnmap(va, 2 * gran));
  EXPECT_EQ(UsedBytes() - before, 2 * gran);
  ASSERT_CU(cuMemUnmap(va + 2 * gran, 2 * gran));
  EXPECT_EQ(UsedBytes(), before);
  ASSERT_CU(cuMemAddressFree(va, 4 * gran));
}

uint64_t PoolAttr(CUmemoryPool pool, CUmemPool_attribute attr) {
  cuuint64_t v = 0;
  EXPECT_CU(cuMemPoolGetAttribute(pool, attr, &v));
  return v;
}

TEST(SimgpuMemory, DefaultPoolGrowsInChunksAndTrimsAtSynchronize) {
  ScopedContext ctx;
  uint64_t before = UsedBytes();
  CUmemoryPool pool = nullptr;
  ASSERT_CU(cuDeviceGetDefaultMemPool(&pool, 0));
  CUstream s = nullptr;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr a = 0, b = 0;
  ASSERT_CU(cuMemAllocAsync(&a, 1 * kMiB, s));
  EXPECT_EQ(PoolAttr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1 * kMiB);
  EXPECT_EQ(PoolAttr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 2 * kMiB);
  EXPECT_EQ(UsedBytes() - before, 2 * kMiB);
  ASSERT_CU(cuMemAllocAsync(&b, 1536 * 1024, s));  // does not fit the first chunk: one more
  EXPECT_EQ(PoolAttr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * kMiB);
  EXPECT_EQ(UsedBytes() - before, 4 * kMiB);
  ASSERT_CU(cuMemFreeAsync(a, s));
  ASSERT_CU(cuMemFreeAsync(b, s));
  EXPECT_EQ(PoolAttr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0u);
  EXPECT_EQ(PoolAttr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * kMiB);  // kept until sync
  EXPECT_EQ(PoolAttr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 1 * kMiB + 1536 * 1024);
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_EQ(PoolAttr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0u);
  EXPECT_EQ(UsedBytes(), before);

  // With a release threshold the pool keeps that much across synchronizations.
  cuuint64_t threshold = 8 * kMiB;
  ASSERT_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  ASSERT_CU(cuMemAllocAsync(&a, 6 * kMiB, s));
  ASSERT_CU(cuMemFreeAsync(a, s));
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_EQ(PoolAttr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 6 * kMiB);
  ASSERT_CU(cuMemPoolTrimTo(pool, 2 * kMiB));
  EXPECT_EQ(PoolAttr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 2 * kMiB);
  ASSERT_CU(cuMemPoolTrimTo(pool, 0));
  EXPECT_EQ(UsedBytes(), before);
  threshold = 0;
  ASSERT_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  cuuint64_t zero = 0;
  ASSERT_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
  EXPECT_EQ(PoolAttr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 0u);
  ASSERT_CU(cuStreamDestroy(s));
}

TEST(SimgpuMemory, ExplicitPoolAllocationsAndDestroy) {
  ScopedContext ctx;
  uint64_t before = UsedBytes();
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr;
  ASSERT_CU(cuMemPoolCreate(&pool, &props));
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAllocFromPoolAsync(&p, 3 * kMiB, pool, nullptr));
  EXPECT_EQ(UsedBytes() - before, 4 * kMiB);
  ASSERT_CU(cuMemsetD8Async(p, 1, 3 * kMiB, nullptr));
  ASSERT_CU(cuMemPoolDestroy(pool));
  EXPECT_EQ(UsedBytes() - before, 4 * kMiB);  // an outstanding allocation keeps its memory
  ASSERT_CU(cuMemFreeAsync(p, nullptr));
  EXPECT_EQ(UsedBytes(), before);
}

TEST(SimgpuMemory, ArraysTakeTheirElementBytes) {
  ScopedContext ctx;
  uint64_t before = UsedBytes();
  CUDA_ARRAY_DESCRIPTOR d2{};
  d2.Width = 100;
  d2.Height = 50;
  d2.Format = CU_AD_FORMAT_FLOAT;
  d2.NumChannels = 4;
  CUarray a2 = nullptr;
  ASSERT_CU(cuArrayCreate(&a2, &d2));
  EXPECT_EQ(UsedBytes() - before, 100u * 50 * 4 * 4);

  CUDA_ARRAY3D_DESCRIPTOR d3{};
  d3.Width = 64;
  d3.Height = 32;
  d3.Depth = 8;
  d3.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  d3.NumChannels = 2;
  CUarray a3 = nullptr;
  ASSERT_CU(cuArray3DCreate(&a3, &d3));
  EXPECT_EQ(UsedBytes() - before, 100u * 50 * 16 + 64 * 32 * 8 * 2);

  CUDA_ARRAY3D_DESCRIPTOR dm{};
  dm.Width = 256;
  dm.Height = 128;
  dm.Format = CU_AD_FORMAT_HALF;
  dm.NumChannels = 1;
  CUmipmappedArray mip = nullptr;
  ASSERT_CU(cuMipmappedArrayCreate(&mip, &dm, 9));
  uint64_t levels = 0;
  for (int l = 0; l < 9; ++l) {
    uint64_t w = std::max(256 >> l, 1), h = std::max(128 >> l, 1);
    levels += w * h * 2;
  }
  EXPECT_EQ(UsedBytes() - before, 100u * 50 * 16 + 64 * 32 * 8 * 2 + levels);
  CUarray level3 = nullptr;
  ASSERT_CU(cuMipmappedArrayGetLevel(&level3, mip, 3));
  CUDA_ARRAY3D_DESCRIPTOR got{};
  ASSERT_CU(cuArray3DGetDescriptor(&got, level3));
  EXPECT_EQ(got.Width, 32u);
  EXPECT_EQ(got.Height, 16u);
  EXPECT_EQ(cuMipmappedArrayCreate(&mip, &dm, 10), CUDA_ERROR_INVALID_VALUE);  // too many levels
  // Their memory requirements: whole 2 MiB granules, aligned to one.
  CUDA_ARRAY_MEMORY_REQUIREMENTS req{};
  ASSERT_CU(cuArrayGetMemoryRequirements(&req, a2, 0));
  EXPECT_EQ(req.size, 2u << 20);
  EXPECT_EQ(req.alignment, 2u << 20);
  req = {};
  ASSERT_CU(cuMipmappedArrayGetMemoryRequirements(&req, mip, 0));
  EXPECT_EQ(req.size, 2u << 20);
  EXPECT_EQ(req.alignment, 2u << 20);
  EXPECT_EQ(cuArrayGetMemoryRequirements(nullptr, a2, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMipmappedArrayGetMemoryRequirements(&req, nullptr, 0), CUDA_ERROR_INVALID_HANDLE);

  ASSERT_CU(cuMipmappedArrayDestroy(mip));
  ASSERT_CU(cuArrayDestroy(a3));
  ASSERT_CU(cuArrayDestroy(a2));
  EXPECT_EQ(UsedBytes(), before);
  EXPECT_EQ(cuArrayDestroy(a2), CUDA_ERROR_INVALID_HANDLE);
}

TEST(SimgpuMemory, GraphMemoryNodesUseTheGraphPool) {
  ScopedContext ctx;
  uint64_t before = UsedBytes();
  CUgraph g = nullptr;
  ASSERT_CU(cuGraphCreate(&g, 0));
  CUDA_MEM_ALLOC_NODE_PARAMS ap{};
  ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  ap.poolProps.location.id = 0;
  ap.bytesize = 3 * kMiB;
  CUgraphNode alloc = nullptr, set = nullptr, fr = nullptr;
  ASSERT_CU(cuGraphAddMemAllocNode(&alloc, g, nullptr, 0, &ap));
  ASSERT_NE(ap.dptr, 0u);
  CUDA_MEMSET_NODE_PARAMS mp{ap.dptr, 0, 0xab, 1, 3 * kMiB, 1};
  ASSERT_CU(cuGraphAddMemsetNode(&set, g, &alloc, 1, &mp, ctx.get()));
  CUgraphExec exec = nullptr;
  ASSERT_CU(cuGraphInstantiate(&exec, g, 0));
  EXPECT_EQ(UsedBytes(), before);  // nothing until the graph runs
  ASSERT_CU(cuGraphLaunch(exec, nullptr));
  ASSERT_CU(cuStreamSynchronize(nullptr));
  EXPECT_EQ(UsedBytes() - before, 4 * kMiB);
  cuuint64_t used = 0;
  ASSERT_CU(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used));
  EXPECT_EQ(used, 3 * kMiB);
  unsigned char byte = 0;
  ASSERT_CU(cuMemcpyDtoH(&byte, ap.dptr + 12345, 1));
  EXPECT_EQ(byte, 0xab);
  EXPECT_EQ(cuGraphLaunch(exec, nullptr), CUDA_ERROR_INVALID_VALUE);  // not freed yet

  CUgraph g2 = nullptr;
  ASSERT_CU(cuGraphCreate(&g2, 0));
  ASSERT_CU(cuGraphAddMemFreeNode(&fr, g2, nullptr, 0, ap.dptr));
  CUgraphExec exec2 = nullptr;
  ASSERT_CU(cuGraphInstantiate(&exec2, g2, 0));
  ASSERT_CU(cuGraphLaunch(exec2, nullptr));
  ASSERT_CU(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used));
  EXPECT_EQ(used, 0u);
  EXPECT_EQ(UsedBytes() - before, 4 * kMiB);  // reserved by the graph pool until trimmed
  ASSERT_CU(cuDeviceGraphMemTrim(0));
  EXPECT_EQ(UsedBytes(), before);
  ASSERT_CU(cuGraphLaunch(exec, nullptr));  // runs again now that the memory was freed
  ASSERT_CU(cuMemFreeAsync(ap.dptr, nullptr));
  ASSERT_CU(cuGraphLaunch(exec, nullptr));
  ASSERT_CU(cuMemFree(ap.dptr));  // graph memory may be freed like any other
  ASSERT_CU(cuDeviceGraphMemTrim(0));
  EXPECT_EQ(UsedBytes(), before);
  ASSERT_CU(cuGraphExecDestroy(exec));
  ASSERT_CU(cuGraphExecDestroy(exec2));
  ASSERT_CU(cuGraphDestroy(g));
  ASSERT_CU(cuGraphDestroy(g2));
}

TEST(SimgpuMemory, DeviceCannotBeFilledBeyondItsPhysicalSize) {
  ScopedContext ctx(1);  // the 1 GiB device
  uint64_t used = UsedBytes(1);
  size_t free_bytes = 0, total = 0;
  ASSERT_CU(cuMemGetInfo(&free_bytes, &total));
  EXPECT_EQ(total, kDevice1Bytes);
  EXPECT_EQ(free_bytes, kDevice1Bytes - used);
  CUdeviceptr all = 0, one = 0;
  ASSERT_CU(cuMemAlloc(&all, free_bytes));
  EXPECT_EQ(cuMemAlloc(&one, 1), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(one, 0u);
  EXPECT_EQ(UsedBytes(1), kDevice1Bytes);
  // Every other path is refused too, and takes nothing.
  size_t pitch = 0;
  EXPECT_EQ(cuMemAllocPitch(&one, &pitch, 512, 1, 4), CUDA_ERROR_OUT_OF_MEMORY);
  // (Managed memory lives on the host until touched: it is not refused.)
  CUdeviceptr managed = 0;
  EXPECT_EQ(cuMemAllocManaged(&managed, 512, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(managed), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAllocAsync(&one, 512, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 1;
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(cuMemCreate(&h, 2 * kMiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  CUDA_ARRAY_DESCRIPTOR d{};
  d.Width = 16;
  d.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  d.NumChannels = 1;
  CUarray arr = nullptr;
  EXPECT_EQ(cuArrayCreate(&arr, &d), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(UsedBytes(1), kDevice1Bytes);
  ASSERT_CU(cuMemFree(all));
  EXPECT_EQ(UsedBytes(1), used);
}

TEST(SimgpuMemory, ContextDestructionFreesItsMemory) {
  uint64_t before = UsedBytes();
  CUcontext c = nullptr;
  ASSERT_CU(cuCtxCreate(&c, nullptr, 0, 0));
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 64 * kMiB));
  CUDA_ARRAY_DESCRIPTOR d{};
  d.Width = 1024;
  d.Height = 1024;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  CUarray arr = nullptr;
  ASSERT_CU(cuArrayCreate(&arr, &d));
  EXPECT_EQ(UsedBytes() - before, 68 * kMiB);
  ASSERT_CU(cuCtxDestroy(c));
  EXPECT_EQ(UsedBytes(), before);
  CUcontext current = nullptr;
  ASSERT_CU(cuCtxGetCurrent(&current));
  EXPECT_NE(current, c);
}

TEST(SimgpuMemory, LegacyThirtyTwoBitEntryPointsWork) {
  ScopedContext ctx;
  using LegacyAlloc = CUresult (*)(unsigned int*, unsigned int);
  using LegacyFree = CUresult (*)(unsigned int);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  ASSERT_CU(cuGetProcAddress("cuMemAlloc", &fn, 3000, 0, &status));
  auto alloc = reinterpret_cast<LegacyAlloc>(fn);
  ASSERT_CU(cuGetProcAddress("cuMemFree", &fn, 3000, 0, &status));
  auto free_fn = reinterpret_cast<LegacyFree>(fn);
  uint64_t before = UsedBytes();
  unsigned int p = 0;
  ASSERT_CU(alloc(&p, 4096));
  EXPECT_NE(p, 0u);
  EXPECT_EQ(UsedBytes() - before, 4096u);
  std::memset(reinterpret_cast<void*>(static_cast<uintptr_t>(p)), 1, 4096);
  ASSERT_CU(free_fn(p));
  EXPECT_EQ(UsedBytes(), before);
}

}  // namespace
}  // namespace vgpu::simgpu::testing
