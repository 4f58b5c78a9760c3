#include "node/faults/tenant_levels.h"

#include <gtest/gtest.h>

namespace vgpu::node::faults {
namespace {

constexpr int64_t kSec = 1'000'000'000LL;

// Records every action as "<verb> <slice> <arg>".
class RecordingActions final : public QuarantineActions {
 public:
  Status Warn(const std::string& slice, const std::string&) override {
    log.push_back("warn " + slice);
    return Status::Ok();
  }
  Status LimitShare(const std::string& slice, int pct) override {
    log.push_back("limit " + slice + " " + std::to_string(pct));
    return Status::Ok();
  }
  Status Pause(const std::string& slice, bool paused) override {
    if (paused) ++renewals;
    if (paused && paused_) return Status::Ok();
    paused_ = paused;
    log.push_back(std::string(paused ? "pause " : "resume ") + slice);
    return Status::Ok();
  }
  Status Terminate(const std::string& slice, const std::string&) override {
    log.push_back("terminate " + slice);
    return Status::Ok();
  }
  std::vector<std::string> log;
  int renewals = 0;

 private:
  bool paused_ = false;
};

TEST(TenantLevelsTest, ScriptedSignalsReachEachLevelAtItsThresholdAndComeBack) {
  TenantLevelRules rules;  // warn 1, limit 3, pause 6, terminate 10 strikes; quiet 300 s
  rules.xid_weight = 1;
  RecordingActions actions;
  TenantLevels levels(rules, &actions);
  const struct {
    int strikes;
    TenantLevel level;
  } steps[] = {{1, TenantLevel::kWarn},      {2, TenantLevel::kWarn},  {3, TenantLevel::kLimit},
               {5, TenantLevel::kLimit},     {6, TenantLevel::kPause}, {9, TenantLevel::kPause},
               {10, TenantLevel::kTerminate}};
  int given = 0;
  int64_t t = 0;
  for (const auto& step : steps) {
    while (given < step.strikes) {
      levels.OnSignal("a", TenantSignal::kXid, 1, "XID 13", t);
      ++given;
      t += kSec;
    }
    EXPECT_EQ(levels.LevelOf("a"), step.level) << step.strikes << " strikes";
  }
  EXPECT_EQ(levels.LevelOf("b"), TenantLevel::kNormal);  // nobody else
  EXPECT_EQ(actions.log,
            (std::vector<std::string>{"warn a", "limit a 25", "pause a", "terminate a"}));
  // Way back: one level per quiet period.
  const int64_t last = t - kSec;
  levels.Tick(last + (rules.quiet_s - 1) * kSec);
  EXPECT_EQ(levels.LevelOf("a"), TenantLevel::kTerminate);
  const TenantLevel down[] = {TenantLevel::kPause, TenantLevel::kLimit, TenantLevel::kWarn,
                              TenantLevel::kNormal};
  for (int i = 0; i < 4; ++i) {
    levels.Tick(last + (i + 1) * rules.quiet_s * kSec);
    EXPECT_EQ(levels.LevelOf("a"), down[i]) << i;
  }
  EXPECT_EQ(actions.log.back(), "limit a 0");
  EXPECT_EQ(actions.log[actions.log.size() - 2], "resume a");
  EXPECT_GT(actions.renewals, 1);
}

TEST(TenantLevelsTest, CountersAndMemoryRampsAreSignals) {
  TenantLevelRules rules;
  rules.oom_storm = 10;
  RecordingActions actions;
  TenantLevels levels(rules, &actions);
  levels.OnCounters("a", 100, 500, 0);  // baseline: the past is not judged
  EXPECT_EQ(levels.LevelOf("a"), TenantLevel::kNormal);
  levels.OnCounters("a", 102, 505, 1 * kSec);  // 2 failed launches, 5 refusals
  auto snap = levels.Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].strikes, 2);
  EXPECT_EQ(snap[0].signals.count("oom-storm"), 0u);
  levels.OnCounters("a", 102, 515, 2 * kSec);  // 15 refusals within 10 s: a storm
  EXPECT_EQ(levels.Snapshot()[0].signals.at("oom-storm"), 1u);
  EXPECT_EQ(levels.LevelOf("a"), TenantLevel::kLimit);
  // Slow growth is no ramp; a quick one is, once.
  levels.OnMemory("b", 10, 100, 0);
  levels.OnMemory("b", 96, 100, 120 * kSec);
  EXPECT_EQ(levels.LevelOf("b"), TenantLevel::kNormal);
  levels.OnMemory("b", 10, 100, 200 * kSec);
  levels.OnMemory("b", 97, 100, 230 * kSec);
  levels.OnMemory("b", 98, 100, 231 * kSec);
  EXPECT_EQ(levels.Snapshot()[1].signals.at("memory-ramp"), 1u);
  EXPECT_EQ(levels.LevelOf("b"), TenantLevel::kWarn);
}

TEST(TenantLevelsTest, RulesAreValidatedByField) {
  auto r = ParseTenantLevelRules("warn=2,limit=4,pause=8,terminate=16,quiet=90s,limit-share=10");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->quiet_s, 90);
  EXPECT_EQ(r->limit_share_pct, 10);
  auto bad = [](const std::string& text, const std::string& field) {
    auto p = ParseTenantLevelRules(text);
    ASSERT_FALSE(p.has_value()) << text;
    EXPECT_NE(p.error().message().find(field), std::string::npos) << p.error().message();
  };
  bad("limit-share=0", "limit-share");
  bad("limit-share=100", "limit-share");
  bad("warn=5", "limit");  // not above warn
  bad("terminate=2", "terminate");
  bad("quiet=0s", "quiet");
  bad("quiet=10d", "quiet");
  bad("ramp-pct=40", "ramp-pct");
  bad("colour=3", "colour");
  bad("warn", "field=value");
  bad("warn=-1", "warn");
}

}  // namespace
}  // namespace vgpu::node::faults
