#include "node/modes/mig_static.h"

#include <gtest/gtest.h>

#include <set>

#include "mig/choice.h"

#include "device/fake_backend.h"
#include "mig/profiles.h"
#include "node/cluster/test_pods.h"

namespace vgpu::node {
namespace {

// The profiles a driver would report for `model`, from vgpu's tables.
std::vector<device::MigProfileInfo> ProfilesOf(std::string_view model) {
  return testing::MigProfilesOf(model);
}

std::string Layout(const std::vector<MigPlacement>& plan) {
  std::string out;
  for (const MigPlacement& p : plan) {
    out += (out.empty() ? "" : ",") + p.profile + "@" + std::to_string(p.start);
  }
  return out;
}

TEST(MigStatic, PlansByBacktrackingWhereGreedyFails) {
  // Greedy lowest-start puts 3g at 0 and 2g at 4: the second 1g then finds only slice 7.
  auto plan =
      PlanStaticLayout(ProfilesOf("H200"), {{"1g.18gb", 2}, {"3g.71gb", 1}, {"2g.35gb", 1}});
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_TRUE(Layout(*plan).ends_with(",3g.71gb@4")) << Layout(*plan);  // 3g at 0 leaves no room
  auto full = PlanStaticLayout(ProfilesOf("H200"), {{"1g.18gb", 7}});
  ASSERT_TRUE(full);
  EXPECT_EQ(full->size(), 7u);
  auto me = PlanStaticLayout(ProfilesOf("H100-80GB"), {{"1g.10gb.me", 1}, {"4g.40gb", 1}});
  ASSERT_TRUE(me) << me.error().ToString();
  EXPECT_EQ(Layout(*me), "4g.40gb@0,1g.10gb+me@6");  // a 2g.20gb still fits at 4
}

// The layout that stranded slices: 3g.71gb: 1, 1g.18gb: 2 went to 3g@0, 1g@4, 1g@5, where a
// later 2g.35gb does not fit; placed as `vgpu mig plan` places it, a 2g.35gb still fits.
TEST(MigStatic, KeepsRoomAsMigPlanDoes) {
  auto plan = PlanStaticLayout(ProfilesOf("H200"), {{"3g.71gb", 1}, {"1g.18gb", 2}});
  ASSERT_TRUE(plan) << plan.error().ToString();
  EXPECT_EQ(Layout(*plan), "1g.18gb@0,1g.18gb@1,3g.71gb@4");
}

// One search for both: over every multiset of profiles some valid layout of a table holds, the
// static plan (on the profiles as the driver reports them) is the layout `vgpu mig plan`
// (mig::PlanAdds on vgpu's table) gives.
TEST(MigStatic, EveryStaticLayoutOfEveryTableIsPlannedAsMigPlanPlansIt) {
  for (const mig::ModelTable& table : mig::AllModels()) {
    SCOPED_TRACE(std::string(table.key));
    const std::vector<device::MigProfileInfo> reported = ProfilesOf(table.key);
    // Every multiset of profiles with a valid layout (depth first over the table's placements).
    std::set<std::vector<int>> multisets;
    std::vector<mig::Layout> todo{mig::Layout{&table, {}}};
    std::set<std::string> seen{""};
    while (!todo.empty()) {
      mig::Layout l = todo.back();
      todo.pop_back();
      for (int q = 0; q < static_cast<int>(table.profiles.size()); ++q) {
        for (int s : mig::FeasibleStarts(l, q)) {
          mig::Layout next = l;
          ASSERT_TRUE(mig::Add(&next, {q, s}).ok());
          if (!seen.insert(mig::FormatLayout(next)).second) continue;
          std::vector<int> m;
          for (const mig::Instance& i : next.instances) m.push_back(i.profile);
          std::sort(m.begin(), m.end());
          multisets.insert(m);
          todo.push_back(next);
        }
      }
    }
    ASSERT_GT(multisets.size(), 10u);
    for (const std::vector<int>& m : multisets) {
      std::vector<std::pair<std::string, int>> counts;
      for (int q : m) {
        if (!counts.empty() && counts.back().first == table.profiles[q].name) {
          ++counts.back().second;
        } else {
          counts.emplace_back(std::string(table.profiles[q].name), 1);
        }
      }
      const mig::Plan want = mig::PlanAdds(mig::Layout{&table, {}}, m);
      ASSERT_TRUE(want.all_fit);
      auto got = PlanStaticLayout(reported, counts);
      ASSERT_TRUE(got) << got.error().ToString();
      EXPECT_EQ(Layout(*got), mig::FormatLayout(want.result));
    }
  }
}

TEST(MigStatic, RefusesWhatTheGpuCannotHold) {
  auto unknown = PlanStaticLayout(ProfilesOf("H200"), {{"1g.10gb", 1}});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("no MIG profile \"1g.10gb\""), std::string::npos);
  auto too_many = PlanStaticLayout(ProfilesOf("H200"), {{"3g.71gb", 3}});
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().message().find("at most 2"), std::string::npos);
  auto no_fit =
      PlanStaticLayout(ProfilesOf("H200"), {{"4g.71gb", 1}, {"3g.71gb", 1}, {"1g.18gb", 1}});
  ASSERT_FALSE(no_fit);
  EXPECT_NE(no_fit.error().message().find("no placement holds"), std::string::npos);
}

TEST(MigStatic, AppliesOnlyOnAnIdleGpuAndKeepsMatchingInstances) {
  device::FakeBackend fake;
  fake.AddDefaultDevices(1);
  fake.SetMigProfiles(0, ProfilesOf("H200"));
  auto busy = ApplyStaticLayout(&fake, 0, {{"3g.71gb", 2}}, /*idle=*/false);
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fake.mig_calls().empty());  // nothing changed
  auto applied = ApplyStaticLayout(&fake, 0, {{"3g.71gb", 2}}, true);
  ASSERT_TRUE(applied) << applied.error().ToString();
  ASSERT_EQ(applied->instances.size(), 2u);
  EXPECT_EQ(applied->steps.front(), "enabled MIG");
  // The same layout again changes nothing, busy or not.
  auto again = ApplyStaticLayout(&fake, 0, {{"3g.71gb", 2}}, false);
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_TRUE(again->steps.empty());
  // Another layout: refused while busy, then one 3g is kept and the other replaced.
  EXPECT_FALSE(ApplyStaticLayout(&fake, 0, {{"3g.71gb", 1}, {"1g.18gb", 2}}, false));
  auto changed = ApplyStaticLayout(&fake, 0, {{"3g.71gb", 1}, {"1g.18gb", 2}}, true);
  ASSERT_TRUE(changed) << changed.error().ToString();
  EXPECT_EQ(changed->instances.size(), 3u);
  EXPECT_EQ(changed->steps.size(), 3u);  // one destroy, two creates
  // Instances that already are the requested counts stay, even where a new plan would differ.
  device::FakeBackend other;
  other.AddDefaultDevices(1);
  other.SetMigProfiles(0, ProfilesOf("H200"));
  ASSERT_TRUE(other.SetMigMode(0, true).ok());
  for (auto [id, start] : {std::pair{9, 0}, std::pair{19, 4}, std::pair{19, 5}}) {
    ASSERT_TRUE(other.CreateMigInstance(0, id, start));
  }
  auto kept = ApplyStaticLayout(&other, 0, {{"3g.71gb", 1}, {"1g.18gb", 2}}, true);
  ASSERT_TRUE(kept) << kept.error().ToString();
  EXPECT_TRUE(kept->steps.empty());
}

TEST(MigStatic, AmpereModeChangeWaitsForAReset) {
  device::FakeBackend fake;
  fake.AddDefaultDevices(1);
  fake.SetMigProfiles(0, ProfilesOf("A100-40GB"), /*toggles_at_once=*/false);
  auto pending = ApplyStaticLayout(&fake, 0, {{"3g.20gb", 1}}, true);
  ASSERT_FALSE(pending);
  EXPECT_NE(pending.error().message().find("reset"), std::string::npos);
  fake.ResetGpu(0);
  EXPECT_TRUE(ApplyStaticLayout(&fake, 0, {{"3g.20gb", 1}}, true));
}

}  // namespace
}  // namespace vgpu::node
