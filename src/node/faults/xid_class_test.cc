#include "node/faults/xid_class.h"

#include <gtest/gtest.h>

namespace vgpu::node::faults {
namespace {

TEST(XidClassTest, FollowsNvidiasCatalog) {
  // The application-class XIDs of the fault tests never take the GPU.
  for (uint64_t x : {13, 31, 68, 69, 94}) EXPECT_EQ(ClassifyXid(x), XidClass::kApplication) << x;
  EXPECT_EQ(ClassifyXid(45), XidClass::kApplication);  // WORKFLOW_XID_45: follows another XID
  for (uint64_t x : {43, 63, 92}) EXPECT_EQ(ClassifyXid(x), XidClass::kIgnore) << x;
  // NVIDIA's device plugin ignores 109; the catalog says reset.
  for (uint64_t x : {48, 62, 64, 74, 95, 109, 119, 120}) {
    EXPECT_EQ(ClassifyXid(x), XidClass::kReset) << x;
  }
  EXPECT_EQ(ClassifyXid(79), XidClass::kReboot);
  EXPECT_EQ(ClassifyXid(154), XidClass::kRecovery);
  EXPECT_EQ(ClassifyXid(1), XidClass::kUnknown);  // unused, not in the catalog
  EXPECT_EQ(ClassifyXid(999), XidClass::kUnknown);
  EXPECT_TRUE(IsFatal(ClassifyXid(999)));
  ASSERT_NE(FindXid(94), nullptr);
  EXPECT_STREQ(FindXid(94)->mnemonic, "ROBUST_CHANNEL_CONTAINED_ERROR");
  size_t n = 0;
  const XidInfo* t = XidTable(&n);
  ASSERT_GT(n, 90u);
  for (size_t i = 1; i < n; ++i) EXPECT_LT(t[i - 1].xid, t[i].xid);
}

TEST(XidClassTest, TheDriversRecoveryActionWins) {
  EXPECT_EQ(EffectiveClass(XidClass::kApplication, RecoveryAction::kGpuReset), XidClass::kReset);
  EXPECT_EQ(EffectiveClass(XidClass::kReset, RecoveryAction::kNodeReboot), XidClass::kReboot);
  EXPECT_EQ(EffectiveClass(XidClass::kReset, RecoveryAction::kNone), XidClass::kIgnore);
  EXPECT_EQ(EffectiveClass(XidClass::kApplication, RecoveryAction::kNone), XidClass::kApplication);
  EXPECT_EQ(EffectiveClass(XidClass::kIgnore, RecoveryAction::kDrainAndReset), XidClass::kReset);
  EXPECT_EQ(EffectiveClass(XidClass::kReset, std::nullopt), XidClass::kReset);
  EXPECT_FALSE(RecoveryActionFromValue(6).has_value());
  EXPECT_EQ(RecoveryActionName(*RecoveryActionFromValue(2)), "node-reboot");
}

}  // namespace
}  // namespace vgpu::node::faults
