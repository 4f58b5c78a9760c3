#include "shm/priority.h"

#include <gtest/gtest.h>

namespace vgpu::shm {
namespace {

TEST(Priority, NamesInAnyCaseAndHamisNumbers) {
  int32_t level = -1;
  EXPECT_TRUE(ParsePriority("REALTIME", &level));
  EXPECT_EQ(level, kPriorityRealtime);
  EXPECT_TRUE(ParsePriority("idle", &level));
  EXPECT_EQ(level, kPriorityIdle);
  EXPECT_TRUE(ParsePriority("0", &level));
  EXPECT_EQ(level, kPriorityHigh);
  EXPECT_TRUE(ParsePriority("1", &level));
  EXPECT_EQ(level, kPriorityNormal);
  level = -1;
  for (const char* bad : {"2", "", "hi", "normal ", "-1"}) {
    EXPECT_FALSE(ParsePriority(bad, &level)) << bad;
    EXPECT_EQ(level, -1) << bad;
  }
}

TEST(Priority, HamisNumbersAreHighAndNormal) {
  int32_t level = -1;
  EXPECT_TRUE(HamiPriorityLevel(0, &level));
  EXPECT_EQ(level, kPriorityHigh);
  EXPECT_TRUE(HamiPriorityLevel(1, &level));
  EXPECT_EQ(level, kPriorityNormal);
  level = -1;
  for (int64_t bad : {-1, 2, 4}) {
    EXPECT_FALSE(HamiPriorityLevel(bad, &level)) << bad;
    EXPECT_EQ(level, -1) << bad;
  }
}

TEST(Priority, EveryLevelsNameParsesBackToIt) {
  for (int32_t l = 0; l < kPriorityLevels; ++l) {
    int32_t back = -1;
    ASSERT_TRUE(ParsePriority(PriorityName(l), &back)) << l;
    EXPECT_EQ(back, l);
  }
  EXPECT_STREQ(PriorityName(kPriorityNormal), "normal");
  EXPECT_STREQ(PriorityName(-1), "?");
  EXPECT_STREQ(PriorityName(kPriorityLevels), "?");
}

}  // namespace
}  // namespace vgpu::shm
