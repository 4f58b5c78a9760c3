#include "node/health.h"

#include <gtest/gtest.h>

namespace vgpu::node {
namespace {

using device::HealthEvent;
constexpr int64_t kSec = 1'000'000'000;

HealthEvent Xid(const std::string& uuid, uint64_t code) {
  HealthEvent e;
  e.uuid = uuid;
  e.kind = HealthEvent::Kind::kXid;
  e.code = code;
  return e;
}

TEST(HealthTest, CriticalXidThenRecoveryAfterTheWindow) {
  HealthRules rules;
  rules.recovery_seconds = 60;
  HealthTracker h({"A", "B"}, rules);
  EXPECT_TRUE(h.Healthy("A"));
  EXPECT_TRUE(h.OnEvent(Xid("A", 79), 10 * kSec));
  EXPECT_FALSE(h.Healthy("A"));
  EXPECT_TRUE(h.Healthy("B"));
  EXPECT_FALSE(h.OnEvent(Xid("A", 79), 20 * kSec));  // already unhealthy; the window restarts
  EXPECT_FALSE(h.Tick(75 * kSec));                   // 55 s since the last fault
  EXPECT_FALSE(h.Tick(81 * kSec));                   // window passed, but no good sample yet
  EXPECT_FALSE(h.OnSample("A", true, "", 82 * kSec));
  EXPECT_TRUE(h.Tick(83 * kSec));
  EXPECT_TRUE(h.Healthy("A"));
  auto snap = h.Snapshot();
  EXPECT_EQ(snap[0].unhealthy_transitions, 1);
  EXPECT_EQ(snap[0].events.at("xid:79"), 2u);
}

TEST(HealthTest, IgnoredXidsAndCorrectedEccOnlyCount) {
  HealthTracker h({"A"}, HealthRules{});
  EXPECT_FALSE(h.OnEvent(Xid("A", 13), 1));
  EXPECT_FALSE(h.OnEvent(Xid("A", 43), 1));
  HealthEvent sbe;
  sbe.uuid = "A";
  sbe.kind = HealthEvent::Kind::kSingleBitEcc;
  EXPECT_FALSE(h.OnEvent(sbe, 1));
  EXPECT_TRUE(h.Healthy("A"));
  EXPECT_EQ(h.Snapshot()[0].events.size(), 3u);
}

TEST(HealthTest, StickyXidsNeedAnExplicitRecovery) {
  HealthRules rules;
  rules.recovery_seconds = 1;
  HealthTracker h({"A"}, rules);
  EXPECT_TRUE(h.OnEvent(Xid("A", 48), 0));
  h.OnSample("A", true, "", 5 * kSec);
  EXPECT_FALSE(h.Tick(100 * kSec));
  EXPECT_FALSE(h.Healthy("A"));
  HealthEvent rec;
  rec.uuid = "A";
  rec.kind = HealthEvent::Kind::kRecovered;
  EXPECT_TRUE(h.OnEvent(rec, 101 * kSec));
  EXPECT_TRUE(h.Healthy("A"));
}

TEST(HealthTest, FailedSamplesAndEventSetFailures) {
  HealthRules rules;
  rules.recovery_seconds = 10;
  HealthTracker h({"A", "B"}, rules);
  EXPECT_TRUE(h.OnSample("B", false, "GPU is lost", 0));
  EXPECT_FALSE(h.Healthy("B"));
  EXPECT_NE(h.Snapshot()[1].reason.find("GPU is lost"), std::string::npos);
  HealthEvent all;  // no UUID: the event channel failed
  all.kind = HealthEvent::Kind::kXid;
  all.description = "nvmlEventSetWait failed";
  EXPECT_TRUE(h.OnEvent(all, 1 * kSec));
  EXPECT_FALSE(h.Healthy("A"));
  h.OnSample("A", true, "", 12 * kSec);
  h.OnSample("B", false, "still lost", 12 * kSec);
  EXPECT_TRUE(h.Tick(13 * kSec));
  EXPECT_TRUE(h.Healthy("A"));
  EXPECT_FALSE(h.Healthy("B"));
  HealthEvent dbe;
  dbe.uuid = "A";
  dbe.kind = HealthEvent::Kind::kDoubleBitEcc;
  EXPECT_TRUE(h.OnEvent(dbe, 14 * kSec));
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
