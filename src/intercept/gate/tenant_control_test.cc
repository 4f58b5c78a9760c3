// The node daemon's quarantine as libvgpu.so applies it (tenant_control.h), on the fake driver:
// a paused slice's launches wait until the lease ends or the daemon clears it, are counted, and
// then reach the driver; failed launches and refused allocations are counted in the region.
#include "intercept/gate/tenant_control.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "intercept/fake_driver.h"
#include "intercept/hooks/hooks.h"
#include "intercept/runtime.h"
#include "shm/region_file.h"
#include "support/temp_dir.h"

namespace vgpu::intercept {
namespace {

using testing::Fake;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

class TenantControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
    shm::RegionConfig rc{};
    rc.device_count = 1;
    rc.priority = 2;
    for (auto& l : rc.memory_limit) l = shm::kNoLimit;
    rc.memory_limit[0] = 1 << 20;
    ASSERT_EQ(shm::Mapping::OpenOrCreate((dir_ + "/region").c_str(), rc, &mapping_),
              shm::RegionError::kOk);
    Config config;
    config.memory_limit[0] = 1 << 20;
    config.region_limit[0] = 1 << 20;
    config.any_memory_limit = true;
    config.device_count = 1;
    InstallForTest(testing::MakeFakeDriver(), testing::MakeFakeNvml(), config, mapping_.region(),
                   true);
  }

  shm::TenantControl& control() { return mapping_.region()->header.control; }
  double LaunchMs() {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(cuLaunchKernel(f_, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  vgpu::testing::TempDir tmp_{"vgpu-tenant-control"};
  std::string dir_;
  shm::Mapping mapping_;
  CUfunction f_ = reinterpret_cast<CUfunction>(0x1000);
};

TEST_F(TenantControlTest, APausedSliceHoldsLaunchesUntilTheLeaseEnds) {
  ASSERT_EQ(g_tenant_control.load(), &control());
  EXPECT_LT(LaunchMs(), 50.0);  // not paused
  std::atomic_ref<uint64_t>(control().pause_until_ns).store(NowNs() + 150'000'000ULL);
  double held = LaunchMs();
  EXPECT_GE(held, 140.0);
  EXPECT_LT(held, 2000.0);
  EXPECT_EQ(Fake().launch_kinds[testing::kKernel], 2);  // it did reach the driver afterwards
  EXPECT_EQ(control().held_launches, 1u);
  // The daemon lifts a long pause early.
  std::atomic_ref<uint64_t>(control().pause_until_ns).store(NowNs() + 60'000'000'000ULL);
  std::thread lift([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::atomic_ref<uint64_t>(control().pause_until_ns).store(0);
  });
  held = LaunchMs();
  lift.join();
  EXPECT_GE(held, 90.0);
  EXPECT_LT(held, 5000.0);
  EXPECT_EQ(control().held_launches, 2u);
  // Graph and legacy launches are held too.
  std::atomic_ref<uint64_t>(control().pause_until_ns).store(NowNs() + 50'000'000ULL);
  EXPECT_EQ(cuGraphLaunch(reinterpret_cast<CUgraphExec>(0x3000), nullptr), CUDA_SUCCESS);
  EXPECT_EQ(control().held_launches, 3u);
}

TEST_F(TenantControlTest, FailedLaunchesAndRefusedAllocationsAreCounted) {
  g_cuda.cuLaunchKernel = [](CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**,
                             void**) -> CUresult { return CUDA_ERROR_UNKNOWN; };
  EXPECT_EQ(cuLaunchKernel(f_, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(control().launch_failures, 1u);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc_v2(&p, 4 << 20), CUDA_ERROR_OUT_OF_MEMORY);  // over the 1 MiB limit
  EXPECT_EQ(control().oom_refusals, 1u);
}

}  // namespace
}  // namespace vgpu::intercept
