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
  // The reset did not help: the next one waits reset_retry.
  Take();
  m_.Tick(3 * kSec, &actions_);
  EXPECT_EQ(CountKind(Take(), HealthActionKind::kReset), 0);
  const int64_t t = 2 + rules_.reset_retry_s;
  m_.Tick(t * kSec, &actions_);
  EXPECT_EQ(CountKind(Take(), HealthActionKind::kReset), 1);
  m_.OnResetResult(true, "", (t + 1) * kSec, &actions_);
  m_.OnProbeResult(true, "", (t + 2) * kSec, &actions_);
  m_.Tick((t + 2 + rules_.probation_quiet_s) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kProbation);  // doubled
  m_.OnXid(13, XidClass::kApplication, (t + 3 + rules_.probation_quiet_s) * kSec, &actions_);
  m_.Tick((t + 2 + 2 * rules_.probation_quiet_s) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kProbation);  // the quiet period started over
  m_.Tick((t + 3 + 3 * rules_.probation_quiet_s) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kHealthy);
}

TEST_F(GpuHealthTest, AStuckKernelKeepsItSuspectUntilItEndsAndQuietHeals) {
  m_.OnStuckKernel("a kernel of pid 7 has run for 61000 ms", 0, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kSuspect);
  EXPECT_TRUE(m_.Schedulable());
  EXPECT_NE(m_.status().reason.find("pid 7"), std::string::npos);
  // Still stuck a long time later (reported every round): no quiet period runs.
  for (int64_t t = 5; t <= 2 * rules_.suspect_quiet_s; t += 5) {
    m_.OnStuckKernel("still", t * kSec, &actions_);
    m_.Tick(t * kSec, &actions_);
  }
  EXPECT_EQ(m_.status().state, GpuState::kSuspect);
  // It ended: healthy after the quiet period.
  const int64_t end = 2 * rules_.suspect_quiet_s;
  m_.Tick((end + rules_.suspect_quiet_s - 1) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kSuspect);
  m_.Tick((end + rules_.suspect_quiet_s) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kHealthy);
  // A quarantined GPU stays quarantined.
  m_.OnXid(79, XidClass::kReboot, (end + 400) * kSec, &actions_);
  m_.OnStuckKernel("stuck", (end + 401) * kSec, &actions_);
  EXPECT_EQ(m_.status().state, GpuState::kQuarantined);
}

TEST_F(GpuHealthTest, AProbeThatKeepsFailingStopsTheResetsUntilARecoveryReport) {
  m_.OnSample(true, 0, "", 0, &actions_);
  m_.OnXid(109, XidClass::kReset, 0, &actions_);
  int64_t now = 0;
  int resets = 0;
  // Every reset is followed by a failing probe: reset_attempts resets in all, reset_retry apart.
  for (int round = 0; round < rules_.reset_attempts + 2; ++round) {
    m_.Tick(now, &actions_);
    if (CountKind(Take(), HealthActionKind::kReset) == 1) {
      ++resets;
      m_.OnResetResult(true, "", now, &actions_);
      ASSERT_EQ(CountKind(Take(), HealthActionKind::kProbe), 1);
      m_.OnProbeResult(false, "the kernel did not complete", now, &actions_);
      EXPECT_EQ(m_.status().state, GpuState::kResetPending);
    }
    now += rules_.reset_retry_s * kSec;
  }
  EXPECT_EQ(resets, rules_.reset_attempts);
  EXPECT_NE(m_.status().reason.find("waiting for a recovery report"), std::string::npos)
      << m_.status().reason;
  EXPECT_FALSE(m_.Schedulable());
  // An operator repairs it: probation, a passing probe, healthy.
  m_.OnRecovered("repaired", now, &actions_);
  ASSERT_EQ(CountKind(Take(), HealthActionKind::kProbe), 1);
  m_.OnProbeResult(true, "", now, &actions_);
  m_.Tick(now + (rules_.probation_quiet_s << 3) * kSec, &actions_);
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
