// The launch hooks and the compute gate on the fake driver: every launch entry point (plain,
// per-thread stream, Ex, cooperative, graph, the pre-4.0 cuLaunch/cuLaunchGrid/Async) is held while
// a more important slice has the GPU, and reaches the driver once it is free; launches pass
// straight through without compute settings and when their stream is being captured.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "intercept/fake_driver.h"
#include "intercept/gate/gate.h"
#include "intercept/hooks/hooks.h"
#include "intercept/runtime.h"
#include "shm/arbiter_file.h"
#include "shm/arbiter_policy.h"
#include "shm/region_ops.h"
#include "support/temp_dir.h"

namespace vgpu::intercept {
namespace {

using testing::Fake;
using testing::LaunchKind;

constexpr uint64_t kMs = 1000 * 1000;

class LaunchGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
    GateResetInChild();
  }
  void TearDown() override {
    if (high_ > 0) {
      kill(high_, SIGKILL);
      waitpid(high_, nullptr, 0);
    }
    GateAtExit();
    GateResetInChild();
  }

  // Installs the fake driver with this process in a low-priority slice of the GPU's arbiter.
  void InstallLimited() {
    Config config;
    config.compute_limited = true;
    config.priority = shm::kPriorityLow;
    config.compute_mode = shm::kModeCapped;
    std::snprintf(config.arbiter_dir, sizeof(config.arbiter_dir), "%s", dir_.c_str());
    std::snprintf(config.region_path, sizeof(config.region_path), "%s/low/region", dir_.c_str());
    InstallForTest(testing::MakeFakeDriver(), testing::MakeFakeNvml(), config, nullptr, false);
  }

  // Another process, in a high-priority slice of this GPU, takes the GPU with `ns` of queued work.
  void HighPriorityTakesTheGpu(uint64_t ns) {
    // The fake device 0's UUID (fake_driver.cc: bytes 0x00..0x0f).
    std::string path = dir_ + "/GPU-00010203-0405-0607-0809-0a0b0c0d0e0f.arbiter";
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    high_ = fork();
    ASSERT_GE(high_, 0);
    if (high_ == 0) {
      shm::ArbiterMapping m;
      if (shm::ArbiterMapping::OpenOrCreate(path.c_str(), "GPU-fake", &m) !=
          shm::RegionError::kOk) {
        _exit(1);
      }
      shm::ProcIdentity self = shm::CurrentProcIdentity();
      shm::ArbiterSliceConfig c{};
      c.max_pct = 100;
      c.weight = 1;
      c.level = shm::kPriorityHigh;
      c.mode = shm::kModeCapped;
      c.time_slice_ns = shm::kDefaultTimeSliceNs;
      int slice = -1, proc = -1;
      if (shm::JoinArbiter(m.arbiter(), shm::SliceKey("/high"), "high", c, self,
                           shm::MonotonicNowNs(), &slice, &proc) != shm::RegionError::kOk) {
        _exit(2);
      }
      shm::AdmitRequest req;
      req.slice = slice;
      req.proc = proc;
      req.now_ns = shm::MonotonicNowNs();
      req.estimate_ns = ns;
      if (!shm::TryAdmit(m.arbiter(), req, self).admitted) _exit(3);
      char c1 = 'r';
      if (write(ready[1], &c1, 1) != 1) _exit(4);
      pause();
      _exit(0);
    }
    close(ready[1]);
    char c1 = 0;
    ASSERT_EQ(read(ready[0], &c1, 1), 1);
    close(ready[0]);
  }

  // Runs `launch`; returns how long it was held.
  double HeldMs(const std::function<CUresult()>& launch) {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(launch(), CUDA_SUCCESS);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  void ExpectHeld(LaunchKind kind, const std::function<CUresult()>& launch) {
    InstallLimited();
    HighPriorityTakesTheGpu(60 * kMs);
    double held = HeldMs(launch);
    // High has 60 ms of work queued and keeps the GPU a time slice after it: low waits for it.
    EXPECT_GE(held, 50.0) << "launch kind " << kind;
    EXPECT_LT(held, 2000.0);
    EXPECT_EQ(Fake().launch_kinds[kind], 1);
    EXPECT_EQ(GetGateStats().held, 1u);
  }

  vgpu::testing::TempDir tmp_{"vgpu-gate-test"};
  std::string dir_;
  pid_t high_ = -1;
  CUfunction f_ = reinterpret_cast<CUfunction>(0x1000);
  CUstream s_ = reinterpret_cast<CUstream>(0x2000);
};

TEST_F(LaunchGateTest, PlainLaunchesAreHeld) {
  ExpectHeld(testing::kKernel,
             [&] { return cuLaunchKernel(f_, 1, 1, 1, 32, 1, 1, 0, s_, nullptr, nullptr); });
}

TEST_F(LaunchGateTest, PerThreadStreamLaunchesAreHeld) {
  ExpectHeld(testing::kKernelPtsz, [&] {
    return cuLaunchKernel_ptsz(f_, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr);
  });
}

TEST_F(LaunchGateTest, ExLaunchesAreHeld) {
  CUlaunchConfig config{2, 1, 1, 32, 1, 1, 0, s_, nullptr, 0};
  ExpectHeld(testing::kEx, [&] { return cuLaunchKernelEx(&config, f_, nullptr, nullptr); });
}

TEST_F(LaunchGateTest, ExPerThreadLaunchesAreHeld) {
  CUlaunchConfig config{2, 1, 1, 32, 1, 1, 0, nullptr, nullptr, 0};
  ExpectHeld(testing::kExPtsz,
             [&] { return cuLaunchKernelEx_ptsz(&config, f_, nullptr, nullptr); });
}

TEST_F(LaunchGateTest, CooperativeLaunchesAreHeld) {
  ExpectHeld(testing::kCoop,
             [&] { return cuLaunchCooperativeKernel(f_, 4, 1, 1, 32, 1, 1, 0, s_, nullptr); });
}

TEST_F(LaunchGateTest, CooperativePerThreadLaunchesAreHeld) {
  ExpectHeld(testing::kCoopPtsz, [&] {
    return cuLaunchCooperativeKernel_ptsz(f_, 4, 1, 1, 32, 1, 1, 0, nullptr, nullptr);
  });
}

TEST_F(LaunchGateTest, GraphLaunchesAreHeld) {
  auto exec = reinterpret_cast<CUgraphExec>(0x3000);
  ExpectHeld(testing::kGraph, [&] { return cuGraphLaunch(exec, s_); });
}

TEST_F(LaunchGateTest, GraphPerThreadLaunchesAreHeld) {
  auto exec = reinterpret_cast<CUgraphExec>(0x3000);
  ExpectHeld(testing::kGraphPtsz, [&] { return cuGraphLaunch_ptsz(exec, nullptr); });
}

TEST_F(LaunchGateTest, LegacyLaunchesAreHeld) {
  ExpectHeld(testing::kLaunch, [&] { return cuLaunch(f_); });
}

TEST_F(LaunchGateTest, LegacyGridLaunchesAreHeld) {
  ExpectHeld(testing::kGrid, [&] { return cuLaunchGrid(f_, 8, 2); });
}

TEST_F(LaunchGateTest, LegacyAsyncGridLaunchesAreHeld) {
  ExpectHeld(testing::kGridAsync, [&] { return cuLaunchGridAsync(f_, 8, 2, s_); });
}

TEST_F(LaunchGateTest, AFreeGpuAdmitsAtOnceAndMeasuresTheLaunch) {
  InstallLimited();
  for (int i = 0; i < 20; ++i) {
    EXPECT_LT(
        HeldMs([&] { return cuLaunchKernel(f_, 1, 1, 1, 32, 1, 1, 0, s_, nullptr, nullptr); }),
        50.0);
  }
  // A launch after them polls the completed ones and reports them to the arbiter.
  EXPECT_EQ(cuLaunchKernel(f_, 1, 1, 1, 32, 1, 1, 0, s_, nullptr, nullptr), CUDA_SUCCESS);
  GateStats stats = GetGateStats();
  EXPECT_EQ(stats.admitted, 21u);
  EXPECT_EQ(stats.held, 0u);
  EXPECT_GE(stats.completed, 20u);
  EXPECT_GE(stats.measured, 19u);
}

TEST_F(LaunchGateTest, CapturedLaunchesPassUngated) {
  InstallLimited();
  HighPriorityTakesTheGpu(500 * kMs);
  Fake().capturing = true;
  EXPECT_LT(HeldMs([&] { return cuLaunchKernel(f_, 1, 1, 1, 32, 1, 1, 0, s_, nullptr, nullptr); }),
            100.0);
  EXPECT_EQ(GetGateStats().passed, 1u);
  EXPECT_EQ(GetGateStats().admitted, 0u);
}

TEST_F(LaunchGateTest, WithoutComputeSettingsLaunchesNeverReachTheGate) {
  testing::InstallFake(kNoLimit);
  GateStats before = GetGateStats();
  EXPECT_EQ(cuLaunchKernel(f_, 1, 1, 1, 32, 1, 1, 0, s_, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphLaunch(reinterpret_cast<CUgraphExec>(0x3000), s_), CUDA_SUCCESS);
  GateStats after = GetGateStats();
  EXPECT_EQ(after.admitted, before.admitted);
  EXPECT_EQ(after.passed, before.passed);
  EXPECT_EQ(Fake().launch_kinds[testing::kKernel], 1);
}

}  // namespace
}  // namespace vgpu::intercept
