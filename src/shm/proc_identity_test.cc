#include "shm/proc_identity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>

namespace vgpu::shm {
namespace {

bool Parse(const std::string& text, StatFields* out) {
  return ParseStat(text.data(), text.size(), out);
}

TEST(ProcIdentity, ParsesStateAndStartTime) {
  StatFields f;
  std::string line = "42 (bash) S 1 42 42 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 98765 1000 10\n";
  ASSERT_TRUE(Parse(line, &f));
  EXPECT_EQ(f.state, 'S');
  EXPECT_EQ(f.ppid, 1);
  EXPECT_EQ(f.pgrp, 42);
  EXPECT_EQ(f.start_time, 98765u);
}

TEST(ProcIdentity, SelfStatNamesParentAndGroup) {
  StatFields f;
  ASSERT_TRUE(ReadStat(getpid(), &f));
  EXPECT_EQ(f.ppid, getppid());
  EXPECT_EQ(f.pgrp, getpgrp());
}

TEST(ProcIdentity, CommandWithSpacesAndParentheses) {
  StatFields f;
  std::string line = "7 (a) b (c) d) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 555 0 0";
  ASSERT_TRUE(Parse(line, &f));
  EXPECT_EQ(f.state, 'Z');
  EXPECT_EQ(f.start_time, 555u);
}

TEST(ProcIdentity, MalformedInputIsRejected) {
  StatFields f;
  EXPECT_FALSE(Parse("", &f));
  EXPECT_FALSE(Parse("12 no parens S 1 2 3", &f));
  EXPECT_FALSE(Parse("1 (x) S 1 2", &f));                                          // too short
  EXPECT_FALSE(Parse("1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12a 0", &f));  // not a number
  EXPECT_FALSE(
      Parse("1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99999999999999999999999 0", &f));
}

TEST(ProcIdentity, RandomInputNeverCrashes) {
  std::mt19937 rng(7);
  const char alphabet[] = "0123456789 ()SZ-\n";
  for (int i = 0; i < 5000; ++i) {
    std::string s;
    int n = static_cast<int>(rng() % 120);
    for (int j = 0; j < n; ++j) s += alphabet[rng() % (sizeof(alphabet) - 1)];
    StatFields f;
    Parse(s, &f);
  }
}

TEST(ProcIdentity, SelfIsAliveAndHasAStartTime) {
  ProcIdentity me = CurrentProcIdentity();
  EXPECT_EQ(me.pid, getpid());
  EXPECT_GT(me.start_time, 0u);
  EXPECT_GT(me.pid_ns, 0u);
  ProcSlot slot{};
  slot.pid = me.pid;
  slot.start_time = me.start_time;
  slot.pid_ns = me.pid_ns;
  EXPECT_EQ(CheckLiveness(slot, me.pid_ns), Liveness::kAlive);
  slot.start_time += 1;
  EXPECT_EQ(CheckLiveness(slot, me.pid_ns), Liveness::kDead);
  slot.pid_ns += 1;
  EXPECT_EQ(CheckLiveness(slot, me.pid_ns), Liveness::kUnknown);
  ProcSlot empty{};
  EXPECT_EQ(CheckLiveness(empty, me.pid_ns), Liveness::kDead);
}

}  // namespace
}  // namespace vgpu::shm
