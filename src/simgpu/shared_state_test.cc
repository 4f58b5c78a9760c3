#include "simgpu/shared_state.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "support/temp_dir.h"

namespace vgpu::simgpu {
namespace {

class SharedStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
    path_ = dir_ + "/state";
    config_.devices.push_back(DefaultDevice(0));
    config_.devices[0].memory_bytes = 1 << 30;
  }
  vgpu::testing::TempDir tmp_{"simgpu-state-test"};
  std::string dir_;
  std::string path_;
  Config config_;
};

TEST_F(SharedStateTest, CreatesThenReopensTheSameState) {
  auto a = SharedState::Open(config_, path_);
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  auto b = SharedState::Open(config_, path_);
  ASSERT_TRUE(b.has_value()) << b.error().ToString();
  {
    SharedState::Lock lock(a->get());
    Result<int> slot = (*a)->RegisterProcess(getpid());
    ASSERT_TRUE(slot.has_value());
    EXPECT_TRUE((*a)->TryReserve(*slot, 0, 1000));
  }
  SharedState::Lock lock(b->get());
  EXPECT_EQ((*b)->layout()->devices[0].used_bytes, 1000u);
  EXPECT_EQ((*b)->layout()->devices[0].total_bytes, 1u << 30);
}

TEST_F(SharedStateTest, RefusesAnotherConfigurationForeignFilesAndOtherMajorVersions) {
  ASSERT_TRUE(SharedState::Open(config_, path_).has_value());
  Config other = config_;
  other.devices[0].memory_bytes = 2 << 30;
  auto r = SharedState::Open(other, path_);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("another device configuration"), std::string::npos);

  {
    auto s = SharedState::Open(config_, path_);
    ASSERT_TRUE(s.has_value());
    (*s)->layout()->header.major = kStateMajor + 1;
  }
  r = SharedState::Open(config_, path_);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("state version " + std::to_string(kStateMajor + 1) + "." +
                                     std::to_string(kStateMinor)),
            std::string::npos)
      << r.error().message();

  unlink(path_.c_str());
  std::ofstream(path_) << std::string(sizeof(SharedStateLayout), 'x');
  r = SharedState::Open(config_, path_);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("bad magic"), std::string::npos);
}

TEST_F(SharedStateTest, ReserveIsBoundedByTheDeviceAndReleaseNeverUnderflows) {
  auto s = SharedState::Open(config_, path_);
  ASSERT_TRUE(s.has_value());
  SharedState& st = **s;
  SharedState::Lock lock(&st);
  int slot = *st.RegisterProcess(getpid());
  EXPECT_TRUE(st.TryReserve(slot, 0, (1 << 30) - 512));
  EXPECT_FALSE(st.TryReserve(slot, 0, 1024));
  EXPECT_TRUE(st.TryReserve(slot, 0, 512));
  EXPECT_FALSE(st.TryReserve(slot, 0, 1));
  st.Release(slot, 0, 5ULL << 30);  // more than held: clamps
  EXPECT_EQ(st.layout()->devices[0].used_bytes, 0u);
  EXPECT_EQ(st.layout()->processes[slot].used_bytes[0], 0u);
  EXPECT_FALSE(st.TryReserve(slot, 0, UINT64_MAX));
}

TEST_F(SharedStateTest, DeadProcessesAreReclaimed) {
  auto s = SharedState::Open(config_, path_);
  ASSERT_TRUE(s.has_value());
  SharedState& st = **s;
  pid_t child = fork();
  if (child == 0) {
    auto c = SharedState::Open(config_, path_);
    if (!c.has_value()) _exit(1);
    {
      SharedState::Lock lock(c->get());
      int slot = *(*c)->RegisterProcess(getpid());
      (*c)->TryReserve(slot, 0, 700 << 20);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  SharedState::Lock lock(&st);
  EXPECT_EQ(st.layout()->devices[0].used_bytes, 700u << 20);
  int slot = *st.RegisterProcess(getpid());
  // Registration scanned and freed the dead child's memory.
  EXPECT_EQ(st.layout()->devices[0].used_bytes, 0u);
  EXPECT_TRUE(st.TryReserve(slot, 0, 1 << 30));
}

TEST_F(SharedStateTest, ALockHolderKilledBySigkillDoesNotWedgeTheLock) {
  auto s = SharedState::Open(config_, path_);
  ASSERT_TRUE(s.has_value());
  SharedState& st = **s;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    auto c = SharedState::Open(config_, path_);
    if (!c.has_value()) _exit(1);
    SharedState::Lock* lock = new SharedState::Lock(c->get());
    int slot = *(*c)->RegisterProcess(getpid());
    (*c)->TryReserve(slot, 0, 300 << 20);
    (*c)->layout()->devices[0].used_bytes += 12345;  // a half-done update
    (void)lock;
    char x = 1;
    (void)!write(ready[1], &x, 1);
    pause();
    _exit(0);
  }
  char x;
  ASSERT_EQ(read(ready[0], &x, 1), 1);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  SharedState::Lock lock(&st);  // EOWNERDEAD: repaired, dead process reclaimed
  EXPECT_EQ(st.layout()->devices[0].used_bytes, 0u);
  close(ready[0]);
  close(ready[1]);
}

TEST(SharedStateHelpers, ProcessAliveUsesStartTime) {
  uint64_t start = ProcessStartTime(getpid());
  EXPECT_GT(start, 0u);
  EXPECT_TRUE(ProcessAlive(getpid(), start));
  EXPECT_TRUE(ProcessAlive(getpid(), 0));
  EXPECT_FALSE(ProcessAlive(getpid(), start + 1));  // a reused pid
  EXPECT_FALSE(ProcessAlive(0, 0));
  pid_t child = fork();
  if (child == 0) _exit(0);
  uint64_t child_start = 0;
  for (int i = 0; i < 1000 && child_start == 0; ++i) child_start = ProcessStartTime(child);
  usleep(100000);  // exited, not reaped: a zombie counts as dead
  EXPECT_FALSE(ProcessAlive(child, child_start));
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(ProcessAlive(child, child_start));
}

}  // namespace
}  // namespace vgpu::simgpu
