// Nested slices in the Accountant: every charge is made in the slice's region and in each parent
// region, all or nothing, each under its own limit.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>

#include "intercept/memory/accountant.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"
#include "support/temp_dir.h"

namespace vgpu::intercept {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;

shm::RegionConfig LimitConfig(uint64_t limit) {
  shm::RegionConfig c{};
  c.device_count = 1;
  c.priority = shm::kPriorityNormal;
  for (uint64_t& l : c.memory_limit) l = shm::kNoLimit;
  c.memory_limit[0] = limit;
  return c;
}

Config ProcessConfig(const char* region_path = "") {
  Config c;
  c.any_memory_limit = true;
  std::snprintf(c.region_path, sizeof(c.region_path), "%s", region_path);
  return c;
}

// Another live process of the outer slice (this test's parent process) holding `bytes`.
void ChargeAsAnotherProcess(shm::Region* region, uint64_t bytes) {
  shm::ProcIdentity other = shm::CurrentProcIdentity();
  other.pid = getppid();
  other.start_time = shm::ReadStartTime(other.pid);
  int slot = -1;
  ASSERT_EQ(shm::ClaimSlot(region, other, &slot), shm::RegionError::kOk);
  ASSERT_EQ(shm::Charge(region, slot, 0, bytes, shm::kNoLimit, other), shm::RegionError::kOk);
}

class AccountantChain : public ::testing::Test {
 protected:
  void Init(uint64_t inner_limit, uint64_t outer_limit) {
    inner_ = std::make_unique<shm::Region>();
    outer_ = std::make_unique<shm::Region>();
    shm::InitializeRegion(inner_.get(), LimitConfig(inner_limit), false);
    shm::InitializeRegion(outer_.get(), LimitConfig(outer_limit), false);
    acct_.InitWithRegion(ProcessConfig(), inner_.get(), false);
    acct_.AddParentForTest(outer_.get());
  }
  uint64_t InnerUsed() const { return shm::DeviceUsed(inner_.get(), 0); }
  uint64_t OuterUsed() const { return shm::DeviceUsed(outer_.get(), 0); }

  std::unique_ptr<shm::Region> inner_, outer_;
  Accountant acct_;
};

TEST_F(AccountantChain, TheOuterLimitHoldsForTheWholeOuterSlice) {
  Init(4096 * kMiB, 1024 * kMiB);
  ChargeAsAnotherProcess(outer_.get(), 600 * kMiB);
  EXPECT_EQ(acct_.Limit(0), 1024 * kMiB);
  EXPECT_FALSE(acct_.Charge(0, 425 * kMiB));
  EXPECT_EQ(InnerUsed(), 0u) << "a refused charge leaves no trace in the inner slice";
  EXPECT_EQ(OuterUsed(), 600 * kMiB);
  ASSERT_TRUE(acct_.Charge(0, 424 * kMiB));
  EXPECT_EQ(InnerUsed(), 424 * kMiB);
  EXPECT_EQ(OuterUsed(), 1024 * kMiB);
  EXPECT_FALSE(acct_.Charge(0, 1));
  // What cuMemGetInfo reports: nothing left, as in the outer slice.
  EXPECT_EQ(acct_.SliceUsed(0), 1024 * kMiB);
  acct_.Uncharge(0, 424 * kMiB);
  EXPECT_EQ(InnerUsed(), 0u);
  EXPECT_EQ(OuterUsed(), 600 * kMiB);
  EXPECT_EQ(acct_.SliceUsed(0), 600 * kMiB);
}

TEST_F(AccountantChain, TheInnerLimitHoldsToo) {
  Init(256 * kMiB, 1024 * kMiB);
  EXPECT_EQ(acct_.Limit(0), 256 * kMiB);
  EXPECT_FALSE(acct_.Charge(0, 256 * kMiB + 1));
  EXPECT_EQ(OuterUsed(), 0u);
  ASSERT_TRUE(acct_.Charge(0, 256 * kMiB));
  EXPECT_EQ(OuterUsed(), 256 * kMiB);
  EXPECT_EQ(acct_.SliceUsed(0), 256 * kMiB);
}

TEST_F(AccountantChain, UnlimitedInnerSliceIsBoundedByTheOuter) {
  Init(shm::kNoLimit, 512 * kMiB);
  EXPECT_EQ(acct_.Limit(0), 512 * kMiB);
  EXPECT_TRUE(acct_.Sliced(0));
  EXPECT_FALSE(acct_.Charge(0, 512 * kMiB + 1));
  EXPECT_TRUE(acct_.Charge(0, 512 * kMiB));
}

TEST_F(AccountantChain, ChargeUpToTakesWhatEveryLevelAllows) {
  Init(1024 * kMiB, 1024 * kMiB);
  ChargeAsAnotherProcess(outer_.get(), 900 * kMiB);
  EXPECT_EQ(acct_.ChargeUpTo(0, 300 * kMiB), 124 * kMiB);
  EXPECT_EQ(InnerUsed(), 124 * kMiB);
  EXPECT_EQ(OuterUsed(), 1024 * kMiB);
  EXPECT_EQ(acct_.ChargeUpTo(0, 10 * kMiB), 0u);
  EXPECT_EQ(InnerUsed(), 124 * kMiB);
}

TEST_F(AccountantChain, ReleasingTheProcessFreesItsSlotsAtEveryLevel) {
  Init(1024 * kMiB, 1024 * kMiB);
  ASSERT_TRUE(acct_.Charge(0, 100 * kMiB));
  acct_.ReleaseProcess();
  EXPECT_EQ(InnerUsed(), 0u);
  EXPECT_EQ(OuterUsed(), 0u);
}

class AccountantChainFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
  }
  // Creates a region file with `limit` linked to `parent` ("" for none).
  std::string Create(const std::string& name, uint64_t limit, const std::string& parent,
                     uint32_t flags) {
    std::string path = dir_ + "/" + name;
    shm::Mapping m;
    EXPECT_EQ(shm::Mapping::OpenOrCreate(path.c_str(), LimitConfig(limit), &m),
              shm::RegionError::kOk);
    if (!parent.empty()) {
      EXPECT_TRUE(shm::SetRegionParent(m.region(), parent.c_str(), flags));
    }
    return path;
  }
  vgpu::testing::TempDir tmp_{"vgpu-chain"};
  std::string dir_;
};

TEST_F(AccountantChainFiles, InitFollowsTheLinksAndTheComputeOwner) {
  std::string outer = Create("outer", 1024 * kMiB, "", 0);
  std::string middle = Create("middle", 512 * kMiB, outer, shm::kParentCompute);
  std::string inner = Create("inner", shm::kNoLimit, middle, 0);
  {
    Accountant acct;
    acct.Init(ProcessConfig(inner.c_str()));
    EXPECT_EQ(acct.parent_count(), 2);
    EXPECT_EQ(acct.Limit(0), 512 * kMiB);
    // inner -> middle is not a compute link: the inner slice arbitrates as itself.
    EXPECT_STREQ(acct.arbiter_slice_path(), inner.c_str());
    EXPECT_TRUE(acct.Charge(0, 100 * kMiB));
    acct.ReleaseProcess();
  }
  Accountant acct;
  acct.Init(ProcessConfig(middle.c_str()));
  EXPECT_EQ(acct.parent_count(), 1);
  EXPECT_STREQ(acct.arbiter_slice_path(), outer.c_str());
}

TEST_F(AccountantChainFiles, AMissingParentRefusesEveryCharge) {
  std::string inner = Create("inner", 1024 * kMiB, dir_ + "/gone", 0);
  Accountant acct;
  acct.Init(ProcessConfig(inner.c_str()));
  EXPECT_FALSE(acct.Charge(0, 1));
  EXPECT_EQ(acct.ChargeUpTo(0, 100), 0u);
  EXPECT_TRUE(acct.Charge(0, 0));
}

TEST_F(AccountantChainFiles, ACycleIsRefusedAsTooDeep) {
  std::string a = dir_ + "/a";
  std::string b = Create("b", 1024 * kMiB, a, 0);
  Create("a", 1024 * kMiB, b, 0);
  Accountant acct;
  acct.Init(ProcessConfig(a.c_str()));
  EXPECT_FALSE(acct.Charge(0, 1));
}

}  // namespace
}  // namespace vgpu::intercept
