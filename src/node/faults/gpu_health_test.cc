#include "node/faults/gpu_health.h"

#include <gtest/gtest.h>

namespace vgpu::node::faults {
namespace {

constexpr int64_t kSec = 1'000'000'000LL;

class GpuHealthTest : public ::testing::Test {
 protected:
  GpuHealthTest() : m_(HealthKey{"GPU-a"}, &rules_) {}

  std::vector<HealthAction> Take() {
    std::vector<HealthAction> out;
    out.swap(actions_);
    return out;
  }
  static int CountKind(const std::vector<HealthAction>& a, HealthActionKind k) {
    int n = 0;
    for (const auto& x : a) n += x.kind == k;
    return n;
  }

  GpuHealthRules rules_;
  GpuHealthMachine m_;
  std::vector<HealthAction> actions_;
};

TEST_F(GpuHealthTest, AHarmlessXidEvery30sNeverChangesTheState) {
  // A day of XID 63 every 30 s, sampled every 5 s, on an injected clock.
  for (int64_t t = 0; t < 24 * 3600; t += 5) {
    if (t % 30 == 0) m_.OnXid(63, XidClass::kIgnore, t * kSec, &actions_);
    m_.OnSample(true, 1, "", t * kSec, &actions_);
    m_.Tick(t * kSec, &actions_);
  }
  EXPECT_TRUE(actions_.empty());
  EXPECT_EQ(m_.status().state, GpuState::kHealthy);
  EXPECT_EQ(m_.status().transitions, 0);
}

TEST_F(GpuHealthTest, AStormMakesItSuspectButSchedulableThenQuietHeals) {
  for (int i = 0; i < rules_.suspect_events; ++i)
    m_.OnXid(92, XidClass::kIgnore, i * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kSuspect);
  EXPECT_TRUE(m_.Schedulable());
  m_.Tick((4 + rules_.suspect_quiet_s - 1) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kSuspect);
  m_.Tick((4 + rules_.suspect_quiet_s) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kHealthy);
  EXPECT_EQ(CountKind(Take(), HealthActionKind::kNotify), 2);
}

TEST_F(GpuHealthTest, AFatalXidQuarantinesResetsProbesAndRecovers) {
  m_.OnSample(true, 2, "", 0, &actions_);  // two processes hold it
  m_.OnXid(109, XidClass::kReset, 1 * kSec, &actions_);
  EXPECT_FALSE(m_.Schedulable());
  EXPECT_EQ(m_.status().state, GpuState::kResetPending);
  EXPECT_EQ(m_.status().quarantines, 1);
  auto a = Take();
  EXPECT_EQ(CountKind(a, HealthActionKind::kNotify), 2);  // -> quarantined -> reset pending
  EXPECT_EQ(CountKind(a, HealthActionKind::kReset), 0);   // processes still hold it
  m_.Tick(10 * kSec, &actions_);
  EXPECT_EQ(CountKind(Take(), HealthActionKind::kReset), 0);
  m_.OnSample(true, 0, "", 11 * kSec, &actions_);  // they are gone
  a = Take();
  ASSERT_EQ(CountKind(a, HealthActionKind::kReset), 1);
  m_.OnResetResult(true, "", 12 * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kProbation);
  EXPECT_FALSE(m_.Schedulable());
  ASSERT_EQ(CountKind(Take(), HealthActionKind::kProbe), 1);
  m_.OnProbeResult(true, "", 13 * kSec, &actions_);
  m_.Tick((13 + rules_.probation_quiet_s - 1) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kProbation);
  m_.Tick((13 + rules_.probation_quiet_s) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kHealthy);
  EXPECT_TRUE(m_.Schedulable());
}

TEST_F(GpuHealthTest, AFailedResetIsRetriedThenWaitsForAnOperator) {
  m_.OnSample(true, 0, "", 0, &actions_);
  m_.OnXid(48, XidClass::kReset, 0, &actions_);
  for (int i = 0; i < rules_.reset_attempts; ++i) {
    int64_t t = i * rules_.reset_retry_s * kSec;
    m_.Tick(t, &actions_);
    ASSERT_EQ(CountKind(Take(), HealthActionKind::kReset), 1) << i;
    m_.OnResetResult(false, "in use", t, &actions_);
  }
  m_.Tick(3600 * kSec, &actions_);
  EXPECT_EQ(CountKind(Take(), HealthActionKind::kReset), 0);
  EXPECT_NE(m_.status().reason.find("waiting for a recovery report"), std::string::npos);
  m_.OnRecovered("operator", 3601 * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kProbation);
}

TEST_F(GpuHealthTest, ARebootFaultWaitsForARecoveryReport) {
  m_.OnXid(79, XidClass::kReboot, 0, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kQuarantined);
  m_.Tick(100000 * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kQuarantined);
  EXPECT_EQ(CountKind(Take(), HealthActionKind::kReset), 0);
  m_.OnRecovered("node rebooted", 1 * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kProbation);
}

TEST_F(GpuHealthTest, ProbationRelapsesAndServesALongerQuietPeriod) {
  m_.OnSample(true, 0, "", 0, &actions_);
  m_.OnXid(109, XidClass::kReset, 0, &actions_);
  m_.OnResetResult(true, "", 1 * kSec, &actions_);
  m_.OnProbeResult(false, "allocation failed", 2 * kSec, &actions_);  // relapse 1
  EXPECT_EQ(m_.status().state, GpuState::kResetPending);
  EXPECT_EQ(m_.status().relapses, 1);
  m_.Tick(2 * kSec, &actions_);
  m_.OnResetResult(true, "", 3 * kSec, &actions_);
  m_.OnProbeResult(true, "", 4 * kSec, &actions_);
  m_.Tick((4 + rules_.probation_quiet_s) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kProbation);  // doubled
  m_.OnXid(13, XidClass::kApplication, (5 + rules_.probation_quiet_s) * kSec, &actions_);
  m_.Tick((4 + 2 * rules_.probation_quiet_s) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kProbation);  // the quiet period started over
  m_.Tick((5 + 3 * rules_.probation_quiet_s) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kHealthy);
}

TEST_F(GpuHealthTest, ALostGpuIsSuspectThenQuarantined) {
  m_.OnSample(false, -1, "GPU is lost", 0, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kSuspect);
  m_.OnSample(false, -1, "GPU is lost", 5 * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kResetPending);
  // Unknown processes do not block the reset of a GPU that does not answer.
  EXPECT_EQ(CountKind(Take(), HealthActionKind::kReset), 1);
}

TEST_F(GpuHealthTest, ApplicationXidsNeverQuarantine) {
  for (int i = 0; i < 1000; ++i) {
    m_.OnXid(13, XidClass::kApplication, i * kSec, &actions_);
    m_.Tick(i * kSec, &actions_);
  }
  EXPECT_TRUE(m_.Schedulable());
  EXPECT_EQ(m_.status().quarantines, 0);
}

TEST(HealthKeyTest, NamesMigInstances) {
  HealthKey k{"GPU-a", 1, 0};
  EXPECT_EQ(k.ToString(), "GPU-a/gi1/ci0");
  EXPECT_EQ(HealthKey{"GPU-a"}.ToString(), "GPU-a");
  EXPECT_FALSE(HealthKey{"GPU-a"} == k);
}

}  // namespace
}  // namespace vgpu::node::faults
