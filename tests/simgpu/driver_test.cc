// Devices, contexts, copies, errors and cuGetProcAddress on the simulated driver, used the way a
// program compiled against cuda.h uses the real one.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "sim_test_util.h"

namespace vgpu::simgpu::testing {
namespace {

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call
#define EXPECT_CU(call) EXPECT_EQ((call), CUDA_SUCCESS) << #call

TEST(SimgpuDriver, VersionAndDevices) {
  int version = 0;
  ASSERT_CU(cuDriverGetVersion(&version));
  EXPECT_EQ(version, 13000);
  int count = 0;
  ASSERT_CU(cuDeviceGetCount(&count));
  EXPECT_EQ(count, 2);
  char name[128];
  ASSERT_CU(cuDeviceGetName(name, sizeof(name), 0));
  EXPECT_STREQ(name, "vgpu simulated H100 (8 GiB)");
  ASSERT_CU(cuDeviceGetName(name, sizeof(name), 1));
  EXPECT_STREQ(name, "vgpu simulated small");
  size_t total = 0;
  ASSERT_CU(cuDeviceTotalMem(&total, 0));
  EXPECT_EQ(total, kDevice0Bytes);
  CUdevice dev = -1;
  EXPECT_EQ(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGetName(name, sizeof(name), 7), CUDA_ERROR_INVALID_DEVICE);
}

TEST(SimgpuDriver, AttributesOfAHopperClassDevice) {
  struct {
    CUdevice_attribute attr;
    int value;
  } const expected[] = {
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 50 << 20},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
      {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
      {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0x18},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
  };
  for (const auto& e : expected) {
    int v = -1;
    ASSERT_CU(cuDeviceGetAttribute(&v, e.attr, 0));
    EXPECT_EQ(v, e.value) << "attribute " << e.attr;
  }
  int v = 0;
  ASSERT_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1));
  EXPECT_EQ(v, 108);  // the A100-like device
  EXPECT_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
  int major = 0, minor = 0;
  ASSERT_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 1));
  ASSERT_CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 1));
  EXPECT_EQ(major * 10 + minor, 80);
}

TEST(SimgpuDriver, UuidAndPciBusIdAreStableAndConsistent) {
  CUuuid a{}, b{};
  ASSERT_CU(cuDeviceGetUuid(&a, 0));
  ASSERT_CU(cuDeviceGetUuid(&b, 1));
  EXPECT_NE(std::memcmp(a.bytes, b.bytes, 16), 0);
  char bus[32];
  ASSERT_CU(cuDeviceGetPCIBusId(bus, sizeof(bus), 1));
  EXPECT_STREQ(bus, "0000:2a:00.0");
  CUdevice dev = -1;
  ASSERT_CU(cuDeviceGetByPCIBusId(&dev, "0000:2a:00.0"));
  EXPECT_EQ(dev, 1);
  ASSERT_CU(cuDeviceGetByPCIBusId(&dev, "00000000:18:00.0"));
  EXPECT_EQ(dev, 0);
}

TEST(SimgpuDriver, PrimaryContextLifecycle) {
  unsigned flags = 0;
  int active = 1;
  ASSERT_CU(cuDevicePrimaryCtxGetState(1, &flags, &active));
  EXPECT_EQ(active, 0);
  ASSERT_CU(cuDevicePrimaryCtxSetFlags(1, CU_CTX_SCHED_BLOCKING_SYNC));
  CUcontext p1 = nullptr, p2 = nullptr;
  ASSERT_CU(cuDevicePrimaryCtxRetain(&p1, 1));
  ASSERT_CU(cuDevicePrimaryCtxRetain(&p2, 1));
  EXPECT_EQ(p1, p2);
  ASSERT_CU(cuDevicePrimaryCtxGetState(1, &flags, &active));
  EXPECT_EQ(active, 1);
  EXPECT_EQ(flags, static_cast<unsigned>(CU_CTX_SCHED_BLOCKING_SYNC));
  ASSERT_CU(cuCtxSetCurrent(p1));
  CUdevice dev = -1;
  ASSERT_CU(cuCtxGetDevice(&dev));
  EXPECT_EQ(dev, 1);
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 10 * kMiB));
  ASSERT_CU(cuDevicePrimaryCtxRelease(1));
  EXPECT_EQ(UsedBytes(1), 10 * kMiB);  // still retained once
  ASSERT_CU(cuDevicePrimaryCtxRelease(1));
  EXPECT_EQ(UsedBytes(1), 0u);  // the last release destroys it and frees its memory
  ASSERT_CU(cuDevicePrimaryCtxGetState(1, &flags, &active));
  EXPECT_EQ(active, 0);
  EXPECT_EQ(cuMemAlloc(&p, 1), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  ASSERT_CU(cuCtxSetCurrent(nullptr));
  ASSERT_CU(cuDevicePrimaryCtxReset(1));
}

TEST(SimgpuDriver, CreatedContextsStackPerThread) {
  CUcontext a = nullptr, b = nullptr, cur = nullptr;
  ASSERT_CU(cuCtxCreate(&a, nullptr, 0, 0));
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, a);
  using CreateV2 = CUresult (*)(CUcontext*, unsigned, CUdevice);
  auto create_v2 = reinterpret_cast<CreateV2>(dlsym(RTLD_DEFAULT, "cuCtxCreate_v2"));
  ASSERT_NE(create_v2, nullptr);
  ASSERT_CU(create_v2(&b, 0, 1));
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, b);
  CUdevice dev = -1;
  ASSERT_CU(cuCtxGetDevice(&dev));
  EXPECT_EQ(dev, 1);
  CUcontext popped = nullptr;
  ASSERT_CU(cuCtxPopCurrent(&popped));
  EXPECT_EQ(popped, b);
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, a);
  ASSERT_CU(cuCtxPushCurrent(b));
  unsigned long long id_a = 0, id_b = 0;
  ASSERT_CU(cuCtxGetId(a, &id_a));
  ASSERT_CU(cuCtxGetId(b, &id_b));
  EXPECT_NE(id_a, id_b);
  ASSERT_CU(cuCtxSynchronize());
  ASSERT_CU(cuCtxDestroy(b));
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, a);
  ASSERT_CU(cuCtxDestroy(a));
  EXPECT_EQ(cuCtxDestroy(a), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_CU(cuCtxGetCurrent(&cur));
  EXPECT_EQ(cur, nullptr);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, 1), CUDA_ERROR_INVALID_CONTEXT);
}

TEST(SimgpuDriver, CopiesRoundTrip) {
  ScopedContext ctx;
  std::vector<uint8_t> src(1 << 20), dst(1 << 20);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  CUdeviceptr a = 0, b = 0;
  ASSERT_CU(cuMemAlloc(&a, src.size()));
  ASSERT_CU(cuMemAlloc(&b, src.size()));
  ASSERT_CU(cuMemcpyHtoD(a, src.data(), src.size()));
  ASSERT_CU(cuMemcpyDtoD(b, a, src.size()));
  ASSERT_CU(cuMemcpyDtoH(dst.data(), b, dst.size()));
  EXPECT_EQ(src, dst);

  CUstream s = nullptr;
  ASSERT_CU(cuStreamCreate(&s, 0));
  std::fill(dst.begin(), dst.end(), 0);
  ASSERT_CU(cuMemsetD32Async(b, 0x01020304, src.size() / 4, s));
  ASSERT_CU(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst.data()), b, 8, s));
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_EQ(dst[0], 0x04);
  EXPECT_EQ(dst[3], 0x01);
  ASSERT_CU(cuMemcpyHtoDAsync(a, src.data(), 100, s));
  ASSERT_CU(cuMemcpyDtoHAsync(dst.data(), a, 100, s));
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), 100), 0);
  ASSERT_CU(cuMemsetD16(a, 0xbeef, 8));
  uint16_t halves[8] = {};
  ASSERT_CU(cuMemcpyDtoH(halves, a, sizeof(halves)));
  EXPECT_EQ(halves[7], 0xbeef);

  // Copies that leave the allocation, or touch freed memory, are refused.
  EXPECT_EQ(cuMemcpyHtoD(a + src.size() - 10, src.data(), 11), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFree(b));
  EXPECT_EQ(cuMemcpyDtoH(dst.data(), b, 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFree(a));
  ASSERT_CU(cuStreamDestroy(s));
}

TEST(SimgpuDriver, TwoDimensionalAndArrayCopies) {
  ScopedContext ctx;
  const size_t width = 300, height = 20;
  CUdeviceptr d = 0;
  size_t pitch = 0;
  ASSERT_CU(cuMemAllocPitch(&d, &pitch, width, height, 4));
  std::vector<uint8_t> host(width * height), back(width * height);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(i % 251);
  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = host.data();
  up.srcPitch = width;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = d;
  up.dstPitch = pitch;
  up.WidthInBytes = width;
  up.Height = height;
  ASSERT_CU(cuMemcpy2D(&up));
  ASSERT_CU(cuMemsetD2D8(d + width, pitch, 0, pitch - width, height));  // padding only
  CUDA_MEMCPY2D down{};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = d;
  down.srcPitch = pitch;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = back.data();
  down.dstPitch = width;
  down.WidthInBytes = width;
  down.Height = height;
  ASSERT_CU(cuMemcpy2DAsync(&down, nullptr));
  ASSERT_CU(cuStreamSynchronize(nullptr));
  EXPECT_EQ(host, back);

  CUDA_ARRAY_DESCRIPTOR ad{};
  ad.Width = 64;
  ad.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  ad.NumChannels = 1;
  CUarray arr = nullptr;
  ASSERT_CU(cuArrayCreate(&arr, &ad));
  ASSERT_CU(cuMemcpyHtoA(arr, 4, host.data(), 60));
  uint8_t out[60] = {};
  ASSERT_CU(cuMemcpyAtoH(out, arr, 4, 60));
  EXPECT_EQ(std::memcmp(out, host.data(), 60), 0);
  EXPECT_EQ(cuMemcpyHtoA(arr, 10, host.data(), 60), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuArrayDestroy(arr));
  ASSERT_CU(cuMemFree(d));
}

TEST(SimgpuDriver, ErrorNamesAndUnsimulatedCalls) {
  const char* s = nullptr;
  ASSERT_CU(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
  EXPECT_STREQ(s, "CUDA_ERROR_OUT_OF_MEMORY");
  ASSERT_CU(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
  EXPECT_STREQ(s, "out of memory");
  ASSERT_CU(cuGetErrorString(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, &s));
  EXPECT_STREQ(s, "not mapped as array");
  EXPECT_EQ(cuGetErrorName(static_cast<CUresult>(12345), &s), CUDA_ERROR_INVALID_VALUE);
  const void* table = &s;
  CUuuid id{};
  EXPECT_EQ(cuGetExportTable(&table, &id), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(table, nullptr);
  // Exported but not simulated: texture objects.
  CUtexObject tex = 0;
  CUDA_RESOURCE_DESC res{};
  CUDA_TEXTURE_DESC td{};
  EXPECT_EQ(cuTexObjectCreate(&tex, &res, &td, nullptr), CUDA_ERROR_NOT_SUPPORTED);
}

template <typename T>
T Proc(const char* name, int version, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  EXPECT_CU(cuGetProcAddress(name, &fn, version, flags, &status));
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS) << name;
  return reinterpret_cast<T>(fn);
}

void* Sym(const char* name) { return dlsym(RTLD_DEFAULT, name); }

TEST(SimgpuDriver, GetProcAddressPicksTheVersionedVariant) {
  EXPECT_EQ(Proc<void*>("cuMemAlloc", 13000), Sym("cuMemAlloc_v2"));
  EXPECT_EQ(Proc<void*>("cuMemAlloc", 3010), Sym("cuMemAlloc"));
  EXPECT_EQ(Proc<void*>("cuCtxCreate", 12000), Sym("cuCtxCreate_v3"));
  EXPECT_EQ(Proc<void*>("cuCtxCreate", 13000), Sym("cuCtxCreate_v4"));
  EXPECT_EQ(Proc<void*>("cuGetProcAddress", 12000), Sym("cuGetProcAddress_v2"));
  EXPECT_EQ(Proc<void*>("cuGetProcAddress", 11030), Sym("cuGetProcAddress"));
  const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  EXPECT_EQ(Proc<void*>("cuLaunchKernel", 13000, pt), Sym("cuLaunchKernel_ptsz"));
  EXPECT_EQ(Proc<void*>("cuLaunchKernel", 13000), Sym("cuLaunchKernel"));
  EXPECT_EQ(Proc<void*>("cuMemcpyHtoD", 13000, pt), Sym("cuMemcpyHtoD_v2_ptds"));
  EXPECT_EQ(Proc<void*>("cuMemcpyAsync", 13000, pt), Sym("cuMemcpyAsync_ptsz"));
  EXPECT_EQ(Proc<void*>("cuMemsetD8Async", 13000, pt), Sym("cuMemsetD8Async_ptsz"));
  EXPECT_EQ(Proc<void*>("cuStreamGetCaptureInfo", 12000, pt),
            Sym("cuStreamGetCaptureInfo_v2_ptsz"));
  // Functions without a per-thread variant come back as they are.
  EXPECT_EQ(Proc<void*>("cuMemAlloc", 13000, pt), Sym("cuMemAlloc_v2"));

  void* fn = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status;
  EXPECT_EQ(cuGetProcAddress("cuNoSuchThing", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(cuGetProcAddress("cuMemAllocAsync", &fn, 11000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);

  // The first-generation cuGetProcAddress works too, and what it returns is callable.
  using V1 = CUresult (*)(const char*, void**, int, cuuint64_t);
  auto v1 = reinterpret_cast<V1>(Sym("cuGetProcAddress"));
  ASSERT_NE(v1, nullptr);
  ASSERT_CU(v1("cuMemAlloc", &fn, 12000, 0));
  ScopedContext ctx;
  CUdeviceptr p = 0;
  ASSERT_CU(reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(fn)(&p, 4096));
  ASSERT_CU(Proc<CUresult (*)(CUdeviceptr)>("cuMemFree", 13000)(p));
}

TEST(SimgpuDriver, EveryExportedNameResolves) {
  int missing = 0;
#define SIMGPU_DRIVER_SYMBOL(name, base, version, kind) missing += Sym(#name) == nullptr;
#include "simgpu/gen/driver_symbols.inc"
#undef SIMGPU_DRIVER_SYMBOL
  EXPECT_EQ(missing, 0);
}

}  // namespace
}  // namespace vgpu::simgpu::testing
