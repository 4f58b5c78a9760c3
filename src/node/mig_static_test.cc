#include "node/mig_static.h"

#include <gtest/gtest.h>

#include "device/fake_backend.h"
#include "mig/profiles.h"
#include "node/test_pods.h"

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
  EXPECT_EQ(Layout(*plan), "2g.35gb@0,1g.18gb@2,1g.18gb@3,3g.71gb@4");
  auto full = PlanStaticLayout(ProfilesOf("H200"), {{"1g.18gb", 7}});
  ASSERT_TRUE(full);
  EXPECT_EQ(full->size(), 7u);
  auto me = PlanStaticLayout(ProfilesOf("H100-80GB"), {{"1g.10gb.me", 1}, {"4g.40gb", 1}});
  ASSERT_TRUE(me) << me.error().ToString();
  EXPECT_EQ(Layout(*me), "4g.40gb@0,1g.10gb+me@4");
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
