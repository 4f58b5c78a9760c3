// The simulated NVML's device view and the ABI of its structures.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "sim_test_util.h"

namespace vgpu::simgpu::testing {
namespace {

#define ASSERT_NVML(call) ASSERT_EQ((call), NVML_SUCCESS) << #call

TEST(SimgpuNvml, RequiresInitAndCountsInits) {
  unsigned count = 0;
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  ASSERT_NVML(nvmlInit_v2());
  ASSERT_NVML(nvmlInitWithFlags(0));
  ASSERT_NVML(nvmlShutdown());
  ASSERT_NVML(nvmlDeviceGetCount_v2(&count));  // still initialized once
  EXPECT_EQ(count, 2u);
  ASSERT_NVML(nvmlShutdown());
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_STREQ(nvmlErrorString(NVML_ERROR_INSUFFICIENT_SIZE), "Insufficient Size");
}

// Every code the simulated NVML returns reads as a reason (the A100's pending MIG mode is
// reported as NVML_ERROR_RESET_REQUIRED; `vgpu mig apply` prints its string).
TEST(SimgpuNvml, EveryReturnedCodeHasItsReason) {
  EXPECT_STREQ(nvmlErrorString(NVML_ERROR_RESET_REQUIRED),
               "The GPU requires a reset before it can be used again");
  for (nvmlReturn_t r :
       {NVML_ERROR_UNINITIALIZED, NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_SUPPORTED,
        NVML_ERROR_NO_PERMISSION, NVML_ERROR_ALREADY_INITIALIZED, NVML_ERROR_NOT_FOUND,
        NVML_ERROR_INSUFFICIENT_SIZE, NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_TIMEOUT,
        NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_GPU_IS_LOST,
        NVML_ERROR_RESET_REQUIRED, NVML_ERROR_IN_USE, NVML_ERROR_INSUFFICIENT_RESOURCES,
        NVML_ERROR_MEMORY, NVML_ERROR_ARGUMENT_VERSION_MISMATCH, NVML_ERROR_NO_DATA}) {
    EXPECT_STRNE(nvmlErrorString(r), "Unknown Error") << r;
  }
}

class SimgpuNvmlDevice : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NVML(nvmlInit_v2()); }
  void TearDown() override { EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS); }
};

TEST_F(SimgpuNvmlDevice, IdentityMatchesTheDriver) {
  for (unsigned i = 0; i < 2; ++i) {
    nvmlDevice_t dev = nullptr;
    ASSERT_NVML(nvmlDeviceGetHandleByIndex_v2(i, &dev));
    unsigned index = 99;
    ASSERT_NVML(nvmlDeviceGetIndex(dev, &index));
    EXPECT_EQ(index, i);
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    ASSERT_NVML(nvmlDeviceGetName(dev, name, sizeof(name)));
    char cu_name[128];
    ASSERT_EQ(cuDeviceGetName(cu_name, sizeof(cu_name), static_cast<int>(i)), CUDA_SUCCESS);
    EXPECT_STREQ(name, cu_name);
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    ASSERT_NVML(nvmlDeviceGetUUID(dev, uuid, sizeof(uuid)));
    CUuuid cu{};
    ASSERT_EQ(cuDeviceGetUuid(&cu, static_cast<int>(i)), CUDA_SUCCESS);
    char expected[64];
    const auto* b = reinterpret_cast<const unsigned char*>(cu.bytes);
    std::snprintf(expected, sizeof(expected), "GPU-%02x%02x%02x%02x-", b[0], b[1], b[2], b[3]);
    EXPECT_EQ(std::string(uuid).rfind(expected, 0), 0u) << uuid;
    nvmlDevice_t by_uuid = nullptr;
    ASSERT_NVML(nvmlDeviceGetHandleByUUID(uuid, &by_uuid));
    EXPECT_EQ(by_uuid, dev);
    nvmlPciInfo_t pci{};
    ASSERT_NVML(nvmlDeviceGetPciInfo_v3(dev, &pci));
    char cu_bus[32];
    ASSERT_EQ(cuDeviceGetPCIBusId(cu_bus, sizeof(cu_bus), static_cast<int>(i)), CUDA_SUCCESS);
    EXPECT_STREQ(pci.busIdLegacy, cu_bus);
    EXPECT_EQ(std::string(pci.busId), std::string("0000") + cu_bus);
    nvmlDevice_t by_bus = nullptr;
    ASSERT_NVML(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &by_bus));
    EXPECT_EQ(by_bus, dev);
  }
  nvmlDevice_t dev = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(2, &dev), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &dev),
            NVML_ERROR_NOT_FOUND);
  ASSERT_NVML(nvmlDeviceGetHandleByIndex_v2(0, &dev));
  char tiny[4];
  EXPECT_EQ(nvmlDeviceGetName(dev, tiny, sizeof(tiny)), NVML_ERROR_INSUFFICIENT_SIZE);
  int major = 0, minor = 0;
  ASSERT_NVML(nvmlDeviceGetCudaComputeCapability(dev, &major, &minor));
  EXPECT_EQ(major, 9);
  int version = 0;
  ASSERT_NVML(nvmlSystemGetCudaDriverVersion(&version));
  EXPECT_EQ(version, 13000);
  char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  ASSERT_NVML(nvmlSystemGetDriverVersion(driver, sizeof(driver)));
  EXPECT_NE(std::string(driver).find("simgpu"), std::string::npos);
  int brand = 0;
  EXPECT_EQ(nvmlDeviceGetBrand(dev, &brand), NVML_ERROR_NOT_SUPPORTED);
}

// PCIe receive throughput counts the bytes that managed-memory faults move to the device.
TEST_F(SimgpuNvmlDevice, PcieReceiveThroughputCountsManagedFaults) {
  nvmlDevice_t dev = nullptr;
  ASSERT_NVML(nvmlDeviceGetHandleByIndex_v2(1, &dev));
  unsigned kbps = 0;
  EXPECT_EQ(nvmlDeviceGetPcieThroughput(dev, 7, &kbps), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_NVML(nvmlDeviceGetPcieThroughput(dev, 1, &kbps));  // the first measurement
  ScopedContext ctx(1);
  CUdeviceptr m = 0;
  ASSERT_EQ(cuMemAllocManaged(&m, 64 * kMiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  CUmemLocation loc{CU_MEM_LOCATION_TYPE_DEVICE, 1};
  ASSERT_EQ(cuMemPrefetchAsync(m, 64 * kMiB, loc, 0, nullptr), CUDA_SUCCESS);
  double t0 = NowMs();
  while (NowMs() - t0 < 30) {
  }
  ASSERT_NVML(nvmlDeviceGetPcieThroughput(dev, 1, &kbps));
  // 64 MiB within the time since the first call (at least 30 ms, much less than 10 s).
  EXPECT_GT(kbps, 64u * 1024 / 10);
  EXPECT_LT(kbps, 64u * 1024 * 1000 / 30 + 1);
  ASSERT_EQ(cuMemFree(m), CUDA_SUCCESS);
}

TEST_F(SimgpuNvmlDevice, MemoryInfoFollowsAllocations) {
  nvmlDevice_t dev = nullptr;
  ASSERT_NVML(nvmlDeviceGetHandleByIndex_v2(1, &dev));
  nvmlMemory_t before{};
  ASSERT_NVML(nvmlDeviceGetMemoryInfo(dev, &before));
  EXPECT_EQ(before.total, kDevice1Bytes);
  ScopedContext ctx(1);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 96 * kMiB), CUDA_SUCCESS);
  nvmlMemory_t after{};
  ASSERT_NVML(nvmlDeviceGetMemoryInfo(dev, &after));
  EXPECT_EQ(after.used - before.used, 96 * kMiB);
  EXPECT_EQ(after.free + after.used, after.total);
  nvmlMemory_v2_t v2{};
  EXPECT_EQ(nvmlDeviceGetMemoryInfo_v2(dev, &v2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  v2.version = nvmlMemory_v2;
  ASSERT_NVML(nvmlDeviceGetMemoryInfo_v2(dev, &v2));
  EXPECT_EQ(v2.used, after.used);
  EXPECT_EQ(v2.reserved, 0u);
  // This process is listed with what it holds.
  nvmlProcessInfo_t infos[8];
  unsigned n = 8;
  ASSERT_NVML(nvmlDeviceGetComputeRunningProcesses_v3(dev, &n, infos));
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(infos[0].pid, static_cast<unsigned>(getpid()));
  EXPECT_EQ(infos[0].usedGpuMemory, 96 * kMiB);
  ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

}  // namespace
}  // namespace vgpu::simgpu::testing
