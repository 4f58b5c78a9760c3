// Compute settings: keys of the limits file and the environment, precedence (the file wins, the
// environment may only lower), modes and their guarantees, the safe side of bad values.
#include "intercept/config/compute_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "intercept/config/config_test_util.h"

namespace vgpu::intercept {
namespace {

using Result = CombinedConfig;

TEST(ComputeConfig, NothingSetMeansNoGate) {
  Result r = Combine("", {"CUDA_TASK_PRIORITY=1", "CUDA_DEVICE_SM_LIMIT=0"});
  EXPECT_FALSE(r.config.compute_limited);
  EXPECT_EQ(r.config.priority, shm::kPriorityNormal);
  EXPECT_EQ(r.config.time_slice_ns, shm::kDefaultTimeSliceNs);
  EXPECT_EQ(r.config.weight, 1u);
}

TEST(ComputeConfig, CappedIsTheDefaultAndItsGuaranteeIsTheMax) {
  Result r = Combine("cores=30\ncores.1=60\n", {});
  EXPECT_EQ(r.errors.count, 0) << Errors(r.errors);
  EXPECT_TRUE(r.config.compute_limited);
  EXPECT_EQ(r.config.compute_mode, shm::kModeCapped);
  EXPECT_EQ(r.config.guarantee[0], 30u);
  EXPECT_EQ(r.config.guarantee[1], 60u);
  EXPECT_EQ(r.config.guarantee[2], 30u);
}

TEST(ComputeConfig, AGuaranteeMakesASliceElastic) {
  Result r = Combine("guarantee=30\n", {});
  EXPECT_EQ(r.errors.count, 0) << Errors(r.errors);
  EXPECT_TRUE(r.config.compute_limited);
  EXPECT_EQ(r.config.compute_mode, shm::kModeElastic);
  EXPECT_EQ(r.config.guarantee[0], 30u);
  EXPECT_EQ(r.config.sm_limit[0], 0u);  // max 100
  // A guarantee above the max is cut to the max.
  Result c = Combine("guarantee=50\ncores=40\nmode=elastic\n", {});
  EXPECT_EQ(c.config.guarantee[0], 40u);
  // An explicit capped mode makes the guarantee the max.
  Result k = Combine("guarantee=10\ncores=40\nmode=capped\n", {});
  EXPECT_EQ(k.config.compute_mode, shm::kModeCapped);
  EXPECT_EQ(k.config.guarantee[0], 40u);
}

TEST(ComputeConfig, AllKeysFromTheEnvironment) {
  Result r =
      Combine("", {"VGPU_CORES_GUARANTEE=20", "VGPU_CORES_GUARANTEE_1=5", "VGPU_CORES_WEIGHT=7",
                   "VGPU_CORES_MODE=elastic", "VGPU_PRIORITY=low", "VGPU_TIME_SLICE=2ms",
                   "VGPU_ARBITER_DIR=/run/x/arbiter", "CUDA_DEVICE_SM_LIMIT=80"});
  EXPECT_EQ(r.errors.count, 0) << Errors(r.errors);
  EXPECT_EQ(r.config.guarantee[0], 20u);
  EXPECT_EQ(r.config.guarantee[1], 5u);
  EXPECT_EQ(r.config.weight, 7u);
  EXPECT_EQ(r.config.compute_mode, shm::kModeElastic);
  EXPECT_EQ(r.config.priority, shm::kPriorityLow);
  EXPECT_EQ(r.config.time_slice_ns, 2000000u);
  EXPECT_STREQ(r.config.arbiter_dir, "/run/x/arbiter");
  EXPECT_EQ(r.config.sm_limit[0], 80u);
}

TEST(ComputeConfig, TheFileWinsTheEnvironmentMayOnlyLower) {
  const char* file =
      "cores=60\nguarantee=30\nweight=4\nmode=elastic\npriority=high\ntime_slice=10ms\n"
      "arbiter_dir=/run/vgpu/arbiter\n";
  Result raise =
      Combine(file, {"CUDA_DEVICE_SM_LIMIT=90", "VGPU_CORES_GUARANTEE=50", "VGPU_CORES_WEIGHT=9",
                     "VGPU_PRIORITY=realtime", "VGPU_TIME_SLICE=1ms",
                     "VGPU_ARBITER_DIR=/tmp/elsewhere", "VGPU_CORES_MODE=capped"});
  EXPECT_EQ(raise.config.sm_limit[0], 60u);
  EXPECT_EQ(raise.config.guarantee[0], 30u);
  EXPECT_EQ(raise.config.weight, 4u);
  EXPECT_EQ(raise.config.priority, shm::kPriorityHigh);
  EXPECT_EQ(raise.config.time_slice_ns, 10000000u);
  EXPECT_STREQ(raise.config.arbiter_dir, "/run/vgpu/arbiter");
  EXPECT_EQ(raise.config.compute_mode, shm::kModeElastic);
  Result lower = Combine(file, {"CUDA_DEVICE_SM_LIMIT=50", "VGPU_CORES_GUARANTEE=10",
                                "VGPU_CORES_WEIGHT=2", "CUDA_TASK_PRIORITY=1"});
  EXPECT_EQ(lower.config.sm_limit[0], 50u);
  EXPECT_EQ(lower.config.guarantee[0], 10u);
  EXPECT_EQ(lower.config.weight, 2u);
  EXPECT_EQ(lower.config.priority, shm::kPriorityNormal);
  // Lowering the max below the file's guarantee lowers the guarantee with it.
  Result cut = Combine(file, {"CUDA_DEVICE_SM_LIMIT=20"});
  EXPECT_EQ(cut.config.guarantee[0], 20u);
}

TEST(ComputeConfig, BadValuesTakeTheSafeSide) {
  Result r = Combine("", {"VGPU_CORES_GUARANTEE=lots", "VGPU_CORES_WEIGHT=0",
                          "VGPU_PRIORITY=urgent", "VGPU_TIME_SLICE=1h", "VGPU_CORES_MODE=turbo"});
  EXPECT_EQ(r.errors.count, 5) << Errors(r.errors);
  EXPECT_NE(Errors(r.errors).find("VGPU_PRIORITY: \"urgent\""), std::string::npos);
  EXPECT_EQ(r.config.guarantee[0], 0u);  // capped (the safe mode) at max 100: no reservation
  EXPECT_EQ(r.config.compute_mode, shm::kModeCapped);
  EXPECT_EQ(r.config.weight, 1u);
  EXPECT_EQ(r.config.priority, shm::kPriorityIdle);
  EXPECT_EQ(r.config.time_slice_ns, shm::kDefaultTimeSliceNs);
  EXPECT_TRUE(r.config.compute_limited);
  // In a file a bad value rejects the file: capped at 1%, which is then also its guarantee.
  Result f = Combine("guarantee=abc\nmode=elastic\n", {"VGPU_CORES_GUARANTEE=40"});
  EXPECT_EQ(f.config.compute_mode, shm::kModeCapped);
  EXPECT_EQ(f.config.sm_limit[0], 1u);
  EXPECT_LE(f.config.guarantee[0], 1u);
  Result idx = Combine("guarantee.99=10\n", {});
  EXPECT_EQ(idx.errors.count, 1);
}

TEST(ComputeConfig, LatencySlackTheLargerWinsABadOneGivesTheMost) {
  Result none = Combine("priority=high\n", {});
  EXPECT_EQ(none.config.latency_slack_ns, 0u);
  Result file = Combine("priority=high\nlatency_slack=2ms\n", {"VGPU_LATENCY_SLACK=500us"});
  EXPECT_EQ(file.errors.count, 0) << Errors(file.errors);
  EXPECT_EQ(file.config.latency_slack_ns, 2000000u);  // the environment cannot take slack back
  Result env = Combine("priority=high\nlatency_slack=1ms\n", {"VGPU_LATENCY_SLACK=3ms"});
  EXPECT_EQ(env.config.latency_slack_ns, 3000000u);  // but may give more to other slices
  Result bad = Combine("priority=high\n", {"VGPU_LATENCY_SLACK=soon"});
  EXPECT_EQ(bad.errors.count, 1);
  EXPECT_NE(Errors(bad.errors).find("VGPU_LATENCY_SLACK: \"soon\""), std::string::npos);
  EXPECT_EQ(bad.config.latency_slack_ns, uint64_t{shm::kMaxLatencySlackUs} * 1000);
  Result big = Combine("latency_slack=2s\npriority=high\n", {});
  EXPECT_EQ(big.errors.count, 1);
  EXPECT_EQ(big.config.latency_slack_ns, uint64_t{shm::kMaxLatencySlackUs} * 1000);
  // A slack alone is no compute setting: the launches stay ungated.
  EXPECT_FALSE(Combine("latency_slack=1ms\n", {}).config.compute_limited);
}

TEST(ComputeConfig, DefaultArbiterDirFollowsTheStateDir) {
  char out[256];
  std::string a = "VGPU_STATE_DIR=/s", b = "XDG_RUNTIME_DIR=/run/user/5";
  char* env1[] = {a.data(), b.data(), nullptr};
  DefaultArbiterDir(env1, 5, out, sizeof(out));
  EXPECT_STREQ(out, "/s/arbiter");
  char* env2[] = {b.data(), nullptr};
  DefaultArbiterDir(env2, 5, out, sizeof(out));
  EXPECT_STREQ(out, "/run/user/5/vgpu/arbiter");
}

}  // namespace
}  // namespace vgpu::intercept
