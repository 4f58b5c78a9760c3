#include "intercept/gate/copy_pacer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "intercept/config/copy_config.h"

namespace vgpu::intercept {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1'000'000'000;

uint64_t g_now = 0;
uint64_t FakeNow() { return g_now; }
void FakeSleep(uint64_t until) {
  if (until > g_now) g_now = until;
}

Config Capped(uint64_t h2d, uint64_t d2h, bool borrow = false) {
  Config c;
  c.copy_rate[0] = h2d;
  c.copy_rate[1] = d2h;
  c.copy_burst_ns = kDefaultCopyBurstNs;
  c.copy_chunk_bytes = kDefaultCopyChunk;
  c.copy_borrow = borrow;
  c.copy_paced = true;
  return c;
}

class CopyPacerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_now = 1000 * kSec;
    std::memset(&state_, 0, sizeof(state_));
    std::memset(&link_, 0, sizeof(link_));
  }
  CopyPacer Make(const Config& c, uint64_t owner, CopyLinkFile* link = nullptr) {
    CopyPacer p;
    p.SetClockForTest(FakeNow, FakeSleep);
    p.Init(c, &state_, link, owner);
    return p;
  }
  shm::CopyQosState state_;
  CopyLinkFile link_;
};

TEST(CopyPacerMath, CostAndGcra) {
  EXPECT_EQ(CopyCostNs(1'000'000, 1'000'000'000), kMs);
  EXPECT_EQ(CopyCostNs(1, 3), 333'333'334u);  // rounded up
  EXPECT_EQ(CopyCostNs(5, 0), 0u);
  // Idle bucket: the chunk goes at once and the tat moves one cost ahead of now.
  BucketGrant g = GcraStep(0, 100 * kMs, kMs, 5 * kMs);
  EXPECT_EQ(g.release_ns, 100 * kMs);
  EXPECT_EQ(g.tat_ns, 101 * kMs);
  // A bucket paid 20 ms ahead releases 5 ms (the burst) before its tat.
  g = GcraStep(120 * kMs, 100 * kMs, kMs, 5 * kMs);
  EXPECT_EQ(g.release_ns, 115 * kMs);
  EXPECT_EQ(g.tat_ns, 121 * kMs);
}

TEST_F(CopyPacerTest, RateOverASecondIsTheCap) {
  CopyPacer p = Make(Capped(2'000'000'000, 0), 7);
  EXPECT_TRUE(p.paced(kCopyHostToDevice));
  EXPECT_FALSE(p.paced(kCopyDeviceToHost));
  const uint64_t start = g_now;
  uint64_t sent = 0;
  while (g_now - start < 3 * kSec) {
    p.Take(kCopyHostToDevice, kDefaultCopyChunk);
    sent += kDefaultCopyChunk;
  }
  double rate = static_cast<double>(sent) / (static_cast<double>(g_now - start) / kSec);
  EXPECT_NEAR(rate, 2e9, 2e9 * 0.01);
  EXPECT_EQ(state_.dir[0].paced_bytes, sent);
  EXPECT_GT(state_.dir[0].wait_ns, 2 * kSec);
  EXPECT_EQ(state_.dir[0].rate, 2'000'000'000u);
}

TEST_F(CopyPacerTest, ProcessesOfOneSliceShareTheBucket) {
  CopyPacer a = Make(Capped(1'000'000'000, 0), 7);
  CopyPacer b = Make(Capped(1'000'000'000, 0), 7);
  const uint64_t start = g_now;
  uint64_t sent = 0;
  for (int i = 0; i < 1000; ++i) {
    (i % 2 ? a : b).Take(kCopyHostToDevice, 1 << 20);
    sent += 1 << 20;
  }
  double seconds = static_cast<double>(g_now - start) / kSec;
  EXPECT_NEAR(static_cast<double>(sent) / seconds, 1e9, 1e9 * 0.01);
}

TEST_F(CopyPacerTest, BurstGoesAtOnceAfterIdle) {
  CopyPacer p = Make(Capped(1'000'000'000, 0), 7);  // 5 ms burst = 5 MB
  const uint64_t start = g_now;
  p.Take(kCopyHostToDevice, 1'000'000);
  p.Take(kCopyHostToDevice, 1'000'000);
  EXPECT_EQ(g_now, start);  // within the burst
  for (int i = 0; i < 10; ++i) p.Take(kCopyHostToDevice, 1'000'000);
  EXPECT_GT(g_now, start);
}

TEST_F(CopyPacerTest, BorrowsOnlyWhileNoOtherSliceCopies) {
  CopyPacer a = Make(Capped(1'000'000'000, 0, true), 1, &link_);
  const uint64_t start = g_now;
  for (int i = 0; i < 100; ++i) a.Take(kCopyHostToDevice, 10'000'000);  // 1 GB: 1 s at the cap
  EXPECT_LT(g_now - start, 10 * kMs);  // alone on the link: borrowed
  EXPECT_GT(state_.dir[0].borrowed_bytes, 900'000'000u);

  // Another capped slice starts copying: the borrower falls back to its cap.
  shm::CopyQosState other_state{};
  CopyPacer b;
  b.SetClockForTest(FakeNow, FakeSleep);
  b.Init(Capped(1'000'000'000, 0), &other_state, &link_, 2);
  b.Take(kCopyHostToDevice, 10'000'000);
  EXPECT_FALSE(LinkIdleForOthers(&link_, kCopyHostToDevice, 1, g_now));
  uint64_t borrowed = state_.dir[0].borrowed_bytes;
  uint64_t t0 = g_now;
  for (int i = 0; i < 5; ++i) {
    a.Take(kCopyHostToDevice, 10'000'000);
    b.Take(kCopyHostToDevice, 10'000'000);
  }
  EXPECT_EQ(state_.dir[0].borrowed_bytes, borrowed);
  EXPECT_GE(g_now - t0, 40 * kMs);
}

TEST(CopyLink, EntriesExpireAndAreReused) {
  CopyLinkFile link{};
  MarkLinkActive(&link, 0, 5, 100, 200);
  EXPECT_FALSE(LinkIdleForOthers(&link, 0, 6, 150));
  EXPECT_TRUE(LinkIdleForOthers(&link, 0, 5, 150));
  EXPECT_TRUE(LinkIdleForOthers(&link, 0, 6, 250));
  EXPECT_TRUE(LinkIdleForOthers(&link, 1, 6, 150));
  // Fill the table; an expired entry is taken by a newcomer.
  for (uint64_t o = 10; o < 10 + kCopyLinkEntries; ++o) MarkLinkActive(&link, 1, o, 100, 200);
  MarkLinkActive(&link, 1, 99, 2 * kSec, 3 * kSec);
  EXPECT_FALSE(LinkIdleForOthers(&link, 1, 10, 2 * kSec + 1));
}

}  // namespace
}  // namespace vgpu::intercept
