// Live resize of a region (region_resize.h): overrides, the shrink check against usage, the
// seqlock's fallback on corruption, and a shrink racing with concurrent charges.
#include "shm/region_resize.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "shm/region_ops.h"

namespace vgpu::shm {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;

class ResizeRegionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    void* p =
        mmap(nullptr, sizeof(Region), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    region_ = static_cast<Region*>(p);
    RegionConfig c{};
    c.device_count = 2;
    for (uint64_t& l : c.memory_limit) l = kNoLimit;
    c.memory_limit[0] = 10 * kMiB;
    c.sm_limit[0] = 30;
    InitializeRegion(region_, c, true);
    self_ = CurrentProcIdentity();
    ASSERT_EQ(ClaimSlot(region_, self_, &slot_), RegionError::kOk);
  }
  void TearDown() override { munmap(region_, sizeof(Region)); }

  RegionError Resize(int device, uint64_t memory, uint32_t sm, ResizeRefusal* why = nullptr) {
    ResizeRequest r;
    r.memory_limit[device] = memory;
    r.sm_limit[device] = sm;
    return ResizeRegion(region_, r, self_, why);
  }

  Region* region_ = nullptr;
  ProcIdentity self_{};
  int slot_ = -1;
};

TEST_F(ResizeRegionTest, NoOverrideKeepsTheConfig) {
  EXPECT_EQ(ResizeSeq(region_), 0u);
  EXPECT_EQ(MemoryLimitInForce(region_, 0), 10 * kMiB);
  EXPECT_EQ(SmLimitInForce(region_, 0), 30u);
  EXPECT_FALSE(HasMemoryOverride(region_, 0));
  ResizeControl c;
  EXPECT_FALSE(ReadResize(region_, &c));
}

TEST_F(ResizeRegionTest, GrowingTheLimitLetsChargesThrough) {
  ASSERT_EQ(Charge(region_, slot_, 0, 10 * kMiB, kNoLimit, self_), RegionError::kOk);
  EXPECT_EQ(Charge(region_, slot_, 0, 1, kNoLimit, self_), RegionError::kOverLimit);
  ASSERT_EQ(Resize(0, 20 * kMiB, 0), RegionError::kOk);
  EXPECT_EQ(MemoryLimitInForce(region_, 0), 20 * kMiB);
  EXPECT_EQ(ConfigLimit(region_, 0), 20 * kMiB);
  EXPECT_TRUE(HasMemoryOverride(region_, 0));
  EXPECT_EQ(Charge(region_, slot_, 0, 10 * kMiB, kNoLimit, self_), RegionError::kOk);
  EXPECT_EQ(Charge(region_, slot_, 0, 1, kNoLimit, self_), RegionError::kOverLimit);
  // The config itself is untouched (it stays checksummed).
  EXPECT_EQ(region_->header.config.memory_limit[0], 10 * kMiB);
  EXPECT_EQ(ValidateRegion(region_, sizeof(Region)), RegionError::kOk);
  EXPECT_EQ(SmLimitInForce(region_, 0), 30u);  // only the memory limit changed
}

TEST_F(ResizeRegionTest, ShrinkingBelowUsageIsRefusedWithWhereAndNothingChanges) {
  ASSERT_EQ(Charge(region_, slot_, 0, 6 * kMiB, kNoLimit, self_), RegionError::kOk);
  ASSERT_EQ(Resize(0, 0, 60), RegionError::kOk);
  const uint64_t seq = ResizeSeq(region_);
  ResizeRequest r;
  r.memory_limit[0] = 5 * kMiB;
  r.sm_limit[0] = 20;
  ResizeRefusal why;
  EXPECT_EQ(ResizeRegion(region_, r, self_, &why), RegionError::kOverLimit);
  EXPECT_EQ(why.device, 0);
  EXPECT_EQ(why.used, 6 * kMiB);
  EXPECT_EQ(why.asked, 5 * kMiB);
  EXPECT_EQ(ResizeSeq(region_), seq);
  EXPECT_EQ(MemoryLimitInForce(region_, 0), 10 * kMiB);
  EXPECT_EQ(SmLimitInForce(region_, 0), 60u);  // the refused request changed nothing at all
  // Down to exactly what is in use: accepted, and nothing more fits.
  ASSERT_EQ(Resize(0, 6 * kMiB, 0), RegionError::kOk);
  EXPECT_EQ(Charge(region_, slot_, 0, 1, kNoLimit, self_), RegionError::kOverLimit);
  Uncharge(region_, slot_, 0, kMiB, self_);
  EXPECT_EQ(Charge(region_, slot_, 0, kMiB, kNoLimit, self_), RegionError::kOk);
}

TEST_F(ResizeRegionTest, ComputeOverrideAndBadValues) {
  ASSERT_EQ(Resize(0, 0, 60), RegionError::kOk);
  EXPECT_EQ(SmLimitInForce(region_, 0), 60u);
  ASSERT_EQ(Resize(0, 0, 100), RegionError::kOk);
  EXPECT_EQ(SmLimitInForce(region_, 0), 0u);  // 100: no compute limit
  EXPECT_EQ(SmLimitInForce(region_, 1), 0u);  // untouched device keeps its config (none)
  EXPECT_EQ(Resize(0, 0, 101), RegionError::kCorrupt);
  EXPECT_EQ(Resize(2, kMiB, 0), RegionError::kCorrupt);  // only 2 devices configured
  ResizeControl c;
  ASSERT_TRUE(ReadResize(region_, &c));
  EXPECT_EQ(c.resizes, 2u);
  EXPECT_EQ(c.seq % 2, 0u);
}

TEST_F(ResizeRegionTest, ACorruptedOverrideFallsBackToTheConfig) {
  ASSERT_EQ(Resize(0, 40 * kMiB, 80), RegionError::kOk);
  region_->header.resize.memory_limit[0] ^= 1;  // a stray write
  EXPECT_EQ(MemoryLimitInForce(region_, 0), 10 * kMiB);
  EXPECT_EQ(SmLimitInForce(region_, 0), 30u);
  // A writer that died half-way (odd seq) is repaired by dropping the override.
  ASSERT_EQ(Resize(0, 40 * kMiB, 80), RegionError::kOk);
  region_->header.resize.seq += 1;
  EXPECT_EQ(MemoryLimitInForce(region_, 0), 10 * kMiB);
  {
    RegionLock lock(region_, self_, kDefaultLockTimeoutMs);
    RepairResizeLocked(region_);
  }
  EXPECT_EQ(ResizeSeq(region_) % 2, 0u);
  ResizeControl c;
  EXPECT_TRUE(ReadResize(region_, &c));
  EXPECT_EQ(c.memory_limit[0], 0u);
  EXPECT_EQ(MemoryLimitInForce(region_, 0), 10 * kMiB);
}

// Threads charge and free 1 MiB pieces as fast as they can while the main thread shrinks and
// grows the limit: after every accepted shrink to L, the slice's usage is at most L until the
// next resize (no charge checked against the old limit lands after the shrink).
TEST_F(ResizeRegionTest, AShrinkRacingWithChargesNeverLetsUsagePassTheNewLimit) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 3; ++t) {
    workers.emplace_back([&, t] {
      // Threads of one process share its slot; each charge is atomic under the region mutex.
      const int slot = slot_;
      const ProcIdentity me = self_;
      std::mt19937 rng(t);
      uint64_t held = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (held < 4 * kMiB && rng() % 2 == 0) {
          if (Charge(region_, slot, 0, kMiB, kNoLimit, me) == RegionError::kOk) held += kMiB;
        } else if (held > 0) {
          Uncharge(region_, slot, 0, kMiB, me);
          held -= kMiB;
        }
      }
      if (held > 0) Uncharge(region_, slot, 0, held, me);
    });
  }
  // Shrinks are refused only while the workers hold memory: wait until they do (a loaded machine
  // may not have run them yet), then resize at least 2000 times and until both answers were seen.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (DeviceUsed(region_, 0) < 2 * kMiB && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  std::mt19937 rng(7);
  int accepted = 0, refused = 0;
  for (int i = 0;
       i < 2000 || ((accepted == 0 || refused == 0) && std::chrono::steady_clock::now() < deadline);
       ++i) {
    uint64_t limit = (1 + rng() % 14) * kMiB;
    RegionError e = Resize(0, limit, 0);
    if (e == RegionError::kOk) {
      ++accepted;
      for (int k = 0; k < 20; ++k) ASSERT_LE(DeviceUsed(region_, 0), limit) << i;
    } else {
      ASSERT_EQ(e, RegionError::kOverLimit);
      ++refused;
    }
  }
  stop = true;
  for (std::thread& w : workers) w.join();
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 0);
  EXPECT_EQ(DeviceUsed(region_, 0), 0u);
}

}  // namespace
}  // namespace vgpu::shm
