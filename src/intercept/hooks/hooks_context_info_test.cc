// Context overhead, what the process sees (cuMemGetInfo, cuDeviceTotalMem, NVML), launches.
#include <gtest/gtest.h>

#include "intercept/fake_driver.h"
#include "intercept/hooks/hooks.h"
#include "intercept/runtime.h"

namespace vgpu::intercept {
namespace {

using testing::Fake;
using testing::FakeNvmlDevice;
using testing::InstallFake;
using testing::SliceUsed;

constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kLimit = 1024 * kMiB;
constexpr uint64_t kOverhead = 300 * kMiB;

TEST(ContextHooks, PrimaryContextIsChargedOncePerDeviceWhileRetained) {
  InstallFake(kLimit, kOverhead);
  CUcontext c = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kOverhead);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc_v2(&p, kLimit - kOverhead + 1), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMemAlloc_v2(&p, kLimit - kOverhead), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kLimit);
  // The last release destroys the context and with it its allocations.
  ASSERT_EQ(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST(ContextHooks, ResetGivesBackTheContextsAllocations) {
  InstallFake(kLimit, kOverhead);
  CUcontext c = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc_v2(&p, 100 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), kOverhead);
}

TEST(ContextHooks, ContextOverheadBeyondTheLimitIsRefused) {
  InstallFake(kOverhead - 1, kOverhead);
  CUcontext c = nullptr;
  int calls = Fake().calls;
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&c, 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuCtxCreate_v2(&c, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(Fake().calls, calls);
}

TEST(ContextHooks, CreatedContextsAreChargedUntilDestroyed) {
  InstallFake(kLimit, kOverhead);
  CUcontext a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  ASSERT_EQ(cuCtxCreate_v2(&a, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxCreate_v3(&b, nullptr, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxCreate_v4(&c, nullptr, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 3 * kOverhead);
  EXPECT_EQ(cuCtxCreate(&d, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuCtxDestroy_v2(a), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxDestroy(b), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxDestroy_v2(c), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST(InfoHooks, MemGetInfoReportsTheSlice) {
  InstallFake(kLimit);
  size_t free = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, kLimit);
  EXPECT_EQ(free, kLimit);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc_v2(&p, 100 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(free, kLimit - 100 * kMiB);
  // Free never exceeds what the device really has.
  Fake().used[0] = Fake().physical[0] - 10 * kMiB;
  ASSERT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(free, 10 * kMiB);
}

TEST(InfoHooks, TotalMemIsTheLimitButNeverMoreThanTheDevice) {
  InstallFake(kLimit, 0, 200ULL << 30);
  size_t bytes = 0;
  ASSERT_EQ(cuDeviceTotalMem_v2(&bytes, 0), CUDA_SUCCESS);
  EXPECT_EQ(bytes, kLimit);
  ASSERT_EQ(cuDeviceTotalMem_v2(&bytes, 1), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 80ULL << 30);
}

TEST(InfoHooks, UnlimitedDevicesAreReportedAsTheyAre) {
  InstallFake(kNoLimit);
  size_t free = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, 80ULL << 30);
}

TEST(NvmlHooks, MemoryInfoReportsTheSlice) {
  InstallFake(kLimit);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc_v2(&p, 100 * kMiB), CUDA_SUCCESS);
  nvmlMemory_t m{};
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(FakeNvmlDevice(0), &m), NVML_SUCCESS);
  EXPECT_EQ(m.total, kLimit);
  EXPECT_EQ(m.used, 100 * kMiB);
  EXPECT_EQ(m.free, kLimit - 100 * kMiB);
  nvmlMemory_v2_t m2{};
  m2.version = nvmlMemory_v2;
  ASSERT_EQ(nvmlDeviceGetMemoryInfo_v2(FakeNvmlDevice(0), &m2), NVML_SUCCESS);
  EXPECT_EQ(m2.total, kLimit);
  EXPECT_EQ(m2.used, 100 * kMiB);
  EXPECT_EQ(m2.reserved, 0u);
  // Device 1 has no limit: NVML's own numbers.
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(FakeNvmlDevice(1), &m), NVML_SUCCESS);
  EXPECT_EQ(m.total, 80ULL << 30);
}

TEST(NvmlHooks, ProcessListShowsTheSlicesProcesses) {
  InstallFake(kLimit);
  unsigned int count = 0;
  // Nothing allocated yet: no processes in the slice.
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(FakeNvmlDevice(0), &count, nullptr),
            NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc_v2(&p, 100 * kMiB), CUDA_SUCCESS);
  count = 0;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(FakeNvmlDevice(0), &count, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 1u);
  nvmlProcessInfo_t infos[4];
  count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(FakeNvmlDevice(0), &count, infos),
            NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(infos[0].pid, static_cast<unsigned>(getpid()));
  EXPECT_EQ(infos[0].usedGpuMemory, 100 * kMiB);
  EXPECT_EQ(infos[0].gpuInstanceId, 0xFFFFFFFFu);
  nvmlProcessInfo_v1_t v1[4];
  count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses(FakeNvmlDevice(0), &count, v1), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(v1[0].usedGpuMemory, 100 * kMiB);
  nvmlProcessInfo_v2_t v2[4];
  count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v2(FakeNvmlDevice(0), &count, v2), NVML_SUCCESS);
  EXPECT_EQ(count, 1u);
  // An unlimited device shows the driver's own list.
  count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(FakeNvmlDevice(1), &count, infos),
            NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
}

TEST(LaunchHooks, PassThroughToTheRightVariant) {
  InstallFake(kLimit);
  ASSERT_EQ(cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(Fake().launches, 1);
  ASSERT_EQ(cuLaunchKernel_ptsz(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(Fake().launches, 101);
  ASSERT_EQ(cuGraphLaunch(nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(Fake().launches, 102);
  // Functions the driver lacks are reported, not crashed on.
  g_cuda.cuLaunchKernelEx = nullptr;
  EXPECT_EQ(cuLaunchKernelEx(nullptr, nullptr, nullptr, nullptr), CUDA_ERROR_NOT_SUPPORTED);
}

}  // namespace
}  // namespace vgpu::intercept
