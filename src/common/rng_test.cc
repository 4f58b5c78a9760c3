#include "common/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace vgpu {
namespace {

TEST(Rng, SameSeedSameSequence) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= (x != c.Next());
  }
  EXPECT_TRUE(differs);
}

// The sequence is part of the reproducibility contract: published figures depend on it.
TEST(Rng, SequenceIsPinned) {
  Rng r(1);
  uint64_t first = r.Next();
  Rng again(1);
  EXPECT_EQ(first, again.Next());
  // Pinned value: if this changes, every seeded experiment result changes.
  EXPECT_EQ(first, 0xb3f2af6d0fc710c5ULL);
}

TEST(Rng, UniformIntInRangeAndRoughlyUniform) {
  Rng r(7);
  int counts[10] = {};
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = r.UniformInt(10);
    ASSERT_LT(v, 10u);
    ++counts[v];
  }
  for (int c : counts) {
    EXPECT_GT(c, 9500);
    EXPECT_LT(c, 10500);
  }
}

TEST(Rng, ShuffleIsAPermutation) {
  Rng r(3);
  std::vector<int> v(1000);
  std::iota(v.begin(), v.end(), 0);
  r.Shuffle(v);
  std::vector<int> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_FALSE(std::is_sorted(v.begin(), v.end()));
}

TEST(Rng, UniformDoubleInUnitInterval) {
  Rng r(9);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    double d = r.UniformDouble();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    sum += d;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

}  // namespace
}  // namespace vgpu
