#include "node/health.h"

#include <gtest/gtest.h>

namespace vgpu::node {
namespace {

using device::HealthEvent;
using faults::GpuState;
using faults::HealthActionKind;
constexpr int64_t kSec = 1'000'000'000;

HealthEvent Xid(const std::string& uuid, uint64_t code, uint32_t pid = 0) {
  HealthEvent e;
  e.uuid = uuid;
  e.kind = HealthEvent::Kind::kXid;
  e.code = code;
  e.pid = pid;
  return e;
}

// Carries out the tracker's resets and probes as a working GPU would.
void RunActions(HealthTracker& h, int64_t now, bool probe_ok = true) {
  for (int i = 0; i < 4; ++i) {
    for (const auto& a : h.TakeActions()) {
      if (a.kind == HealthActionKind::kReset) h.OnResetResult(a.key, true, "", now);
      if (a.kind == HealthActionKind::kProbe) h.OnProbeResult(a.key, probe_ok, "probe", now);
    }
  }
}

TEST(HealthTest, AFatalXidQuarantinesItsGpuAloneAndItComesBack) {
  HealthRules rules;
  rules.gpu.probation_quiet_s = 60;
  HealthTracker h({"A", "B"}, rules);
  h.OnSample("A", true, "", 0, 0);
  EXPECT_TRUE(h.OnEvent(Xid("A", 109), 10 * kSec));  // NVIDIA's plugin ignores 109
  EXPECT_FALSE(h.Healthy("A"));
  EXPECT_TRUE(h.Healthy("B"));
  RunActions(h, 10 * kSec);
  EXPECT_EQ(h.Snapshot()[0].state, GpuState::kProbation);
  EXPECT_FALSE(h.Tick(69 * kSec));
  EXPECT_TRUE(h.Tick(70 * kSec));
  EXPECT_TRUE(h.Healthy("A"));
  auto snap = h.Snapshot();
  EXPECT_EQ(snap[0].unhealthy_transitions, 1);
  EXPECT_EQ(snap[0].events.at("xid:109"), 1u);
}

TEST(HealthTest, ApplicationAndHarmlessXidsOnlyCount) {
  HealthTracker h({"A"}, HealthRules{});
  for (uint64_t x : {13, 31, 43, 45, 68, 69, 94, 63, 92}) {
    EXPECT_FALSE(h.OnEvent(Xid("A", x, 4242), 1)) << x;  // attributed
    EXPECT_FALSE(h.OnEvent(Xid("A", x), 1)) << x;        // unattributed: a rate
  }
  HealthEvent sbe;
  sbe.uuid = "A";
  sbe.kind = HealthEvent::Kind::kSingleBitEcc;
  EXPECT_FALSE(h.OnEvent(sbe, 1));
  EXPECT_TRUE(h.Healthy("A"));  // Suspect at most: still schedulable
  EXPECT_EQ(h.Snapshot()[0].events.size(), 10u);
}

TEST(HealthTest, OperatorListsAndTheDriversRecoveryAction) {
  HealthRules rules;
  rules.ignored_xids = {79};
  rules.sticky_xids = {13};
  HealthTracker h({"A", "B"}, rules);
  EXPECT_EQ(h.ClassOf("A", 79), faults::XidClass::kIgnore);
  EXPECT_EQ(h.ClassOf("A", 13), faults::XidClass::kReboot);
  HealthEvent ra;
  ra.uuid = "B";
  ra.kind = HealthEvent::Kind::kRecoveryAction;
  ra.code = 2;  // node reboot
  EXPECT_TRUE(h.OnEvent(ra, 0));
  EXPECT_FALSE(h.Healthy("B"));
  EXPECT_EQ(h.Snapshot()[1].state, GpuState::kQuarantined);
  EXPECT_EQ(h.ClassOf("B", 31), faults::XidClass::kReboot);
  ra.code = 0;  // back to none: an operator dealt with it
  h.OnEvent(ra, 1 * kSec);
  EXPECT_EQ(h.Snapshot()[1].state, GpuState::kProbation);
  EXPECT_EQ(h.ClassOf("B", 31), faults::XidClass::kApplication);
}

TEST(HealthTest, MigInstancesAreKeptApart) {
  HealthTracker h({"A"}, HealthRules{});
  HealthEvent e = Xid("A", 95);
  e.gpu_instance_id = 1;
  e.compute_instance_id = 0;
  h.OnEvent(e, 0);
  EXPECT_TRUE(h.Healthy("A"));  // the GPU's other instances keep working
  auto snap = h.Snapshot();
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap[1].instance, "gi1/ci0");
  EXPECT_FALSE(snap[1].healthy);
}

TEST(HealthTest, FailedSamplesAndEventSetFailures) {
  HealthRules rules;
  rules.gpu.probation_quiet_s = 10;
  HealthTracker h({"A", "B"}, rules);
  EXPECT_FALSE(h.OnSample("B", false, "GPU is lost", 0));  // Suspect
  EXPECT_TRUE(h.OnSample("B", false, "GPU is lost", 1 * kSec));
  EXPECT_FALSE(h.Healthy("B"));
  EXPECT_NE(h.Snapshot()[1].reason.find("GPU is lost"), std::string::npos);
  HealthEvent all;  // no UUID: the event channel failed
  all.kind = HealthEvent::Kind::kXid;
  all.description = "nvmlEventSetWait failed";
  h.OnEvent(all, 2 * kSec);
  h.OnEvent(all, 3 * kSec);
  EXPECT_FALSE(h.Healthy("A"));
}

TEST(HealthTest, XidLists) {
  auto l = ParseXidList("13, 31,43");
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(*l, (std::set<uint64_t>{13, 31, 43}));
  EXPECT_TRUE(ParseXidList("")->empty());
  EXPECT_FALSE(ParseXidList("13,,31").has_value());
  EXPECT_FALSE(ParseXidList("x").has_value());
  EXPECT_FALSE(ParseXidList("-1").has_value());
}

}  // namespace
}  // namespace vgpu::node
