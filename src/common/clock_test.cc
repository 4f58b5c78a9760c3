#include "common/clock.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

TEST(SimulatedClock, MovesOnlyWhenTold) {
  SimulatedClock clock(100);
  EXPECT_EQ(clock.NowNanos(), 100);
  clock.Advance(50);
  EXPECT_EQ(clock.NowNanos(), 150);
  clock.SleepFor(10);
  EXPECT_EQ(clock.NowNanos(), 160);
  clock.AdvanceTo(120);  // earlier: ignored
  EXPECT_EQ(clock.NowNanos(), 160);
  clock.AdvanceTo(1000);
  EXPECT_EQ(clock.NowNanos(), 1000);
  clock.Advance(-5);
  EXPECT_EQ(clock.NowNanos(), 1000);
}

TEST(MonotonicClock, NeverGoesBackwards) {
  Clock& clock = MonotonicClock::Instance();
  int64_t prev = clock.NowNanos();
  for (int i = 0; i < 1000; ++i) {
    int64_t now = clock.NowNanos();
    EXPECT_GE(now, prev);
    prev = now;
  }
  int64_t before = clock.NowNanos();
  clock.SleepFor(1'000'000);
  EXPECT_GE(clock.NowNanos() - before, 1'000'000);
}

}  // namespace
}  // namespace vgpu
