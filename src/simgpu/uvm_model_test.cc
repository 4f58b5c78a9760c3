#include "simgpu/uvm_model.h"

#include <gtest/gtest.h>

namespace vgpu::simgpu {
namespace {

UvmParams Small(uint64_t device_pages) {
  UvmParams p;
  p.device_bytes = device_pages * p.page_bytes;
  return p;
}

TEST(UvmModel, ResidentPagesCostDeviceBandwidthFaultsCostTheLink) {
  UvmModel m(Small(4));
  int a = m.AddOwner(false);
  uint64_t first = m.Allocate(a, 2);
  uint64_t ns = 0;
  ASSERT_TRUE(m.Touch(first, false, &ns));
  // 20 us latency + 2 MiB at 55 GB/s (38.1 us) + 2 MiB at 3.35 TB/s (0.63 us)
  EXPECT_NEAR(static_cast<double>(ns), 20'000 + 38'130 + 626, 5);
  ASSERT_TRUE(m.Touch(first, false, &ns));
  EXPECT_NEAR(static_cast<double>(ns), 626, 2);
  EXPECT_EQ(m.stats(a).faults, 1u);
}

TEST(UvmModel, LowPriorityPagesGoFirstHighPriorityPagesNever) {
  UvmModel m(Small(8));
  int high = m.AddOwner(true);
  int low = m.AddOwner(false);
  uint64_t h = m.Allocate(high, 4);  // half the device
  uint64_t l = m.Allocate(low, 8);   // twice what is left
  uint64_t ns = 0;
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(m.Touch(h + i, true, &ns));
  for (int pass = 0; pass < 3; ++pass) {
    for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(m.Touch(l + i, true, &ns));
    for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(m.Touch(h + i, false, &ns));
  }
  EXPECT_EQ(m.stats(high).evicted, 0u);
  EXPECT_EQ(m.stats(high).faults, 4u);  // only the first touches
  EXPECT_GT(m.stats(low).evicted, 0u);
  EXPECT_EQ(m.resident_pages(), 8u);
}

TEST(UvmModel, ATouchThatWouldEvictHighPriorityPagesFails) {
  UvmModel m(Small(2));
  int high = m.AddOwner(true);
  uint64_t h = m.Allocate(high, 3);
  uint64_t ns = 0;
  ASSERT_TRUE(m.Touch(h, false, &ns));
  ASSERT_TRUE(m.Touch(h + 1, false, &ns));
  EXPECT_FALSE(m.Touch(h + 2, false, &ns));
  EXPECT_EQ(m.stats(high).evicted, 0u);
}

TEST(UvmModel, StreamingBeyondCapacityFallsOffACliff) {
  // LRU and a working set one page larger than the device: every touch of every pass faults.
  UvmModel fits(Small(16)), over(Small(16));
  int a = fits.AddOwner(false), b = over.AddOwner(false);
  uint64_t fa = fits.Allocate(a, 16), fb = over.Allocate(b, 17);
  uint64_t ns = 0, t_fit = 0, t_over = 0;
  for (int pass = 0; pass < 4; ++pass) {
    for (uint64_t i = 0; i < 16; ++i) {
      fits.Touch(fa + i, false, &ns);
      if (pass > 0) t_fit += ns;
    }
    for (uint64_t i = 0; i < 17; ++i) {
      over.Touch(fb + i, false, &ns);
      if (pass > 0) t_over += ns;
    }
  }
  double per_page_fit = static_cast<double>(t_fit) / (3 * 16);
  double per_page_over = static_cast<double>(t_over) / (3 * 17);
  EXPECT_GT(per_page_over / per_page_fit, 10.0);
}

TEST(UvmModel, ALoweredCapacityEvictsLeastRecentlyUsedLowPagesOnly) {
  UvmModel m(Small(4));
  int high = m.AddOwner(true);
  int low = m.AddOwner(false);
  uint64_t h = m.Allocate(high, 1);
  uint64_t l = m.Allocate(low, 3);
  uint64_t ns = 0;
  for (uint64_t p : {h, l, l + 1, l + 2}) ASSERT_TRUE(m.Touch(p, true, &ns));
  ASSERT_TRUE(m.Touch(l, false, &ns));  // l is now the most recently used low page
  uint64_t wb = 0;
  EXPECT_EQ(m.SetCapacity(2, &wb), 0u);
  EXPECT_TRUE(m.Resident(h));
  EXPECT_TRUE(m.Resident(l));
  EXPECT_FALSE(m.Resident(l + 1));
  EXPECT_FALSE(m.Resident(l + 2));
  EXPECT_GT(wb, 0u) << "dirty pages are written back";
  EXPECT_EQ(m.stats(low).evicted, 2u);
  // Below the high-priority pages nothing more can go: one page stays over.
  EXPECT_EQ(m.SetCapacity(0, &wb), 1u);
  EXPECT_TRUE(m.Resident(h));
  EXPECT_EQ(m.stats(high).evicted, 0u);
}

TEST(UvmModel, ReleasedPagesLeaveWithoutWriteBackEvictedOnesWithIt) {
  UvmModel m(Small(4));
  int low = m.AddOwner(false);
  uint64_t a = m.Allocate(low, 2);
  uint64_t ns = 0;
  ASSERT_TRUE(m.Touch(a, true, &ns));
  ASSERT_TRUE(m.Touch(a + 1, true, &ns));
  uint64_t wb = 0;
  m.Release(a, 1);
  EXPECT_EQ(m.resident_pages(), 1u);
  m.Evict(a + 1, 1, &wb);
  EXPECT_EQ(m.resident_pages(), 0u);
  EXPECT_GT(wb, 0u);
  EXPECT_EQ(m.stats(low).evicted, 1u);
}

}  // namespace
}  // namespace vgpu::simgpu
