// Memory mode spill: the memory_mode key (the file wins, the environment may only lower, a bad
// value fails closed), and the spill path of cuMemAlloc against the fake driver: a low-priority
// slice's allocation that the GPU cannot hold becomes managed memory preferring the host, within
// the slice's limit and recorded in the region; a high-priority slice never spills and is never
// told of memory the GPU does not have.
#include "intercept/memory/spill.h"

#include <gtest/gtest.h>

#include "intercept/config/config_test_util.h"
#include "intercept/fake_driver.h"
#include "intercept/hooks/hooks.h"
#include "intercept/runtime.h"

namespace vgpu::intercept {
namespace {

using testing::Fake;
using testing::SliceUsed;

constexpr uint64_t kMiB = 1ULL << 20;

TEST(MemoryModeConfig, DefaultIsStrict) {
  EXPECT_EQ(Combine("", {}).config.memory_mode, kMemoryStrict);
}

TEST(MemoryModeConfig, KeysFromFileAndEnvironment) {
  CombinedConfig f = Combine("memory=1GiB\nmemory_mode=spill\n", {});
  EXPECT_EQ(f.errors.count, 0) << Errors(f.errors);
  EXPECT_EQ(f.config.memory_mode, kMemorySpill);
  CombinedConfig e = Combine("", {"VGPU_MEMORY_MODE=overcommit"});
  EXPECT_EQ(e.config.memory_mode, kMemoryOvercommit);
}

TEST(MemoryModeConfig, TheEnvironmentMayOnlyLower) {
  EXPECT_EQ(Combine("memory_mode=strict\n", {"VGPU_MEMORY_MODE=spill"}).config.memory_mode,
            kMemoryStrict);
  EXPECT_EQ(Combine("memory_mode=spill\n", {"VGPU_MEMORY_MODE=overcommit"}).config.memory_mode,
            kMemoryOvercommit);
}

TEST(MemoryModeConfig, BadValuesFailClosed) {
  CombinedConfig f = Combine("memory=1GiB\nmemory_mode=swap\n", {});
  EXPECT_EQ(f.config.memory_mode, kMemoryStrict);
  EXPECT_EQ(f.config.memory_limit[0], 0u) << "a rejected file leaves no memory";
  std::string text = Errors(f.errors);
  EXPECT_NE(text.find("limits:2"), std::string::npos) << text;
  EXPECT_NE(text.find("not a memory mode"), std::string::npos) << text;
  CombinedConfig e = Combine("", {"VGPU_MEMORY_MODE=Spill"});
  EXPECT_EQ(e.config.memory_mode, kMemoryStrict);
  EXPECT_NE(Errors(e.errors).find("VGPU_MEMORY_MODE"), std::string::npos) << Errors(e.errors);
}

// A slice of 64 MiB on a device with 16 MiB of physical memory.
void InstallSpillFake(uint32_t mode, int32_t priority) {
  DriverApi cuda = testing::MakeFakeDriver();
  NvmlApi nvml = testing::MakeFakeNvml();
  Fake().physical[0] = 16 * kMiB;
  Config config;
  config.memory_limit[0] = config.region_limit[0] = 64 * kMiB;
  config.any_memory_limit = true;
  config.context_overhead = 0;
  config.device_count = 2;
  config.memory_mode = mode;
  config.priority = priority;
  InstallForTest(cuda, nvml, config, nullptr, false);
}

const shm::SpillState& Spill() { return GetRuntime().accountant.region()->header.spill; }

TEST(SpillPath, ALowPrioritySliceSpillsWhatTheGpuCannotHold) {
  InstallSpillFake(kMemorySpill, shm::kPriorityLow);
  EXPECT_EQ(Spill().mode, kMemorySpill);
  EXPECT_EQ(Spill().protected_slice, 0u);
  CUdeviceptr a = 0, b = 0, c = 0;
  ASSERT_EQ(cuMemAlloc_v2(&a, 8 * kMiB), CUDA_SUCCESS);
  EXPECT_TRUE(Fake().managed.empty()) << "what the GPU holds stays device memory";
  ASSERT_EQ(cuMemAlloc_v2(&b, 32 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(Fake().managed.count(b), 1u);
  EXPECT_EQ(Fake().used[0], 8 * kMiB) << "the spilled allocation takes no device memory";
  ASSERT_EQ(Fake().advice.size(), 2u);
  EXPECT_EQ(Fake().advice[0].advice, CU_MEM_ADVISE_SET_PREFERRED_LOCATION);
  EXPECT_EQ(Fake().advice[0].device, kDeviceCpu);
  EXPECT_EQ(Fake().advice[1].advice, CU_MEM_ADVISE_SET_ACCESSED_BY);
  EXPECT_EQ(Fake().advice[1].device, 0);
  EXPECT_EQ(Fake().advice[1].bytes, 32 * kMiB);
  EXPECT_EQ(SliceUsed(), 40 * kMiB) << "spilled memory counts against the slice's limit";
  EXPECT_EQ(Spill().spilled_bytes, 32 * kMiB);
  EXPECT_EQ(Spill().device_spilled[0], 32 * kMiB);
  EXPECT_EQ(Spill().spill_allocs, 1u);
  // The slice is told its limit and what it leaves (24 MiB), though the GPU has 8 MiB free.
  size_t free = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(free, 24 * kMiB);
  EXPECT_EQ(total, 64 * kMiB);
  // The limit still holds: 25 MiB more is refused before the driver sees it.
  int calls = Fake().calls;
  EXPECT_EQ(cuMemAlloc_v2(&c, 25 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(Fake().calls, calls);
  ASSERT_EQ(cuMemFree_v2(b), CUDA_SUCCESS);
  EXPECT_EQ(Spill().spilled_bytes, 0u);
  EXPECT_EQ(Spill().device_spilled[0], 0u);
  EXPECT_EQ(Spill().spilled_peak, 32 * kMiB);
  EXPECT_EQ(SliceUsed(), 8 * kMiB);
  ASSERT_EQ(cuMemFree_v2(a), CUDA_SUCCESS);
  EXPECT_EQ(SliceUsed(), 0u);
}

TEST(SpillPath, OnlyOutOfMemorySpillsAndAFailureGivesTheChargeBack) {
  InstallSpillFake(kMemorySpill, shm::kPriorityNormal);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAlloc_v2(&a, 16 * kMiB), CUDA_SUCCESS);
  Fake().fail_next = true;  // the driver's next allocation fails with CUDA_ERROR_UNKNOWN
  EXPECT_EQ(cuMemAlloc_v2(&b, 8 * kMiB), CUDA_ERROR_UNKNOWN);
  EXPECT_TRUE(Fake().managed.empty());
  EXPECT_EQ(SliceUsed(), 16 * kMiB);
  EXPECT_EQ(Spill().spilled_bytes, 0u);
}

TEST(SpillPath, AHighPrioritySliceNeverSpillsNorIsPromisedMissingMemory) {
  InstallSpillFake(kMemorySpill, shm::kPriorityHigh);
  EXPECT_EQ(Spill().protected_slice, 1u);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAlloc_v2(&a, 12 * kMiB), CUDA_SUCCESS);
  size_t free = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(free, 4 * kMiB) << "the GPU's free memory, not the slice's 52 MiB";
  EXPECT_EQ(cuMemAlloc_v2(&b, 8 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_TRUE(Fake().managed.empty());
  EXPECT_EQ(Spill().gpu_refusals, 1u);
  EXPECT_EQ(Spill().spilled_bytes, 0u);
  EXPECT_EQ(SliceUsed(), 12 * kMiB);
}

TEST(SpillPath, StrictAndOvercommitSlicesNeverSpill) {
  for (uint32_t mode : {kMemoryStrict, kMemoryOvercommit}) {
    InstallSpillFake(mode, shm::kPriorityIdle);
    CUdeviceptr a = 0;
    EXPECT_EQ(cuMemAlloc_v2(&a, 20 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_TRUE(Fake().managed.empty());
    EXPECT_EQ(SliceUsed(), 0u);
    EXPECT_EQ(Spill().gpu_refusals, 0u);
  }
}

}  // namespace
}  // namespace vgpu::intercept
