// The arbiter file: creation and joining, refusal of foreign files, membership, dead processes
// reclaimed (a killed tenant never holds the GPU), a lock holder killed inside the lock, and the
// futex on which gates sleep.
#include "shm/arbiter.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "shm/arbiter_file.h"
#include "shm/arbiter_policy.h"
#include "shm/region_ops.h"
#include "support/temp_dir.h"

namespace vgpu::shm {
namespace {

constexpr uint64_t kMs = 1000 * 1000;

ArbiterSliceConfig Config(uint32_t max, int32_t level = kPriorityNormal) {
  ArbiterSliceConfig c{};
  c.max_pct = max;
  c.guarantee_pct = max;
  c.weight = 1;
  c.level = level;
  c.mode = kModeCapped;
  c.time_slice_ns = kDefaultTimeSliceNs;
  return c;
}

TEST(Arbiter, CreateJoinAndReopen) {
  vgpu::testing::TempDir tmp("vgpu-arbiter-test");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  std::string dir = tmp.path() + "/nested/arbiter";
  char path[512];
  ASSERT_TRUE(ArbiterPath(dir.c_str(), "GPU-abc", path, sizeof(path)));
  EXPECT_EQ(std::string(path), dir + "/GPU-abc.arbiter");
  EXPECT_FALSE(ArbiterPath(dir.c_str(), "GPU/../x", path, sizeof(path)));
  ASSERT_TRUE(ArbiterPath(dir.c_str(), "GPU-abc", path, sizeof(path)));
  ArbiterMapping a;
  ASSERT_EQ(ArbiterMapping::OpenOrCreate(path, "GPU-abc", &a), RegionError::kOk);
  EXPECT_STREQ(a.arbiter()->header.uuid, "GPU-abc");
  EXPECT_EQ(a.arbiter()->header.owner, -1);
  ProcIdentity self = CurrentProcIdentity();
  int slice = -1, proc = -1;
  ASSERT_EQ(JoinArbiter(a.arbiter(), SliceKey("/r1"), "one", Config(30), self, MonotonicNowNs(),
                        &slice, &proc),
            RegionError::kOk);
  ArbiterMapping b;
  ASSERT_EQ(ArbiterMapping::OpenExisting(path, false, &b), RegionError::kOk);
  EXPECT_EQ(b.arbiter()->slices[slice].key, SliceKey("/r1"));
  EXPECT_STREQ(b.arbiter()->slices[slice].name, "one");
  EXPECT_EQ(b.arbiter()->slices[slice].members, 1);
  // A second process record of the same slice shares the slice record.
  ProcIdentity other = self;
  other.start_time += 1;
  int slice2 = -1, proc2 = -1;
  ASSERT_EQ(JoinArbiter(a.arbiter(), SliceKey("/r1"), "one", Config(50), other, MonotonicNowNs(),
                        &slice2, &proc2),
            RegionError::kOk);
  EXPECT_EQ(slice2, slice);
  EXPECT_NE(proc2, proc);
  EXPECT_EQ(a.arbiter()->slices[slice].members, 2);
  EXPECT_EQ(a.arbiter()->slices[slice].config.max_pct, 30u);  // the first joiner's config
  EXPECT_TRUE(LeaveArbiter(a.arbiter(), slice2, proc2, other, MonotonicNowNs()));
  EXPECT_TRUE(LeaveArbiter(a.arbiter(), slice, proc, self, MonotonicNowNs()));
  EXPECT_EQ(a.arbiter()->slices[slice].key, 0u);  // freed with its last member
}

TEST(Arbiter, ForeignFilesAreRefusedUntouched) {
  vgpu::testing::TempDir tmp("vgpu-arbiter-test");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  std::string dir = tmp.path();
  std::string path = dir + "/GPU-x.arbiter";
  {
    ArbiterMapping a;
    ASSERT_EQ(ArbiterMapping::OpenOrCreate(path.c_str(), "GPU-x", &a), RegionError::kOk);
    a.arbiter()->header.major = kArbiterMajor + 1;
  }
  ArbiterMapping b;
  EXPECT_EQ(ArbiterMapping::OpenOrCreate(path.c_str(), "GPU-x", &b), RegionError::kForeignVersion);
  EXPECT_EQ(ArbiterMapping::OpenExisting(path.c_str(), false, &b), RegionError::kForeignVersion);
  std::string junk = dir + "/junk.arbiter";
  int fd = open(junk.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "hello, world, not an arbiter", 28), 28);
  close(fd);
  EXPECT_EQ(ArbiterMapping::OpenOrCreate(junk.c_str(), "GPU-y", &b), RegionError::kBadMagic);
  EXPECT_EQ(ArbiterMapping::OpenExisting((dir + "/none.arbiter").c_str(), false, &b),
            RegionError::kIo);
}

TEST(Arbiter, ConfigRanges) {
  EXPECT_TRUE(ValidSliceConfig(Config(30)));
  ArbiterSliceConfig c = Config(30);
  c.guarantee_pct = 40;
  EXPECT_FALSE(ValidSliceConfig(c));
  c = Config(0);
  EXPECT_FALSE(ValidSliceConfig(c));
  c = Config(30);
  c.time_slice_ns = 10;
  EXPECT_FALSE(ValidSliceConfig(c));
  c = Config(30);
  c.level = 7;
  EXPECT_FALSE(ValidSliceConfig(c));
}

// A child joins, owns the GPU with work queued, and is SIGKILLed: the parent's next admission
// finds the turn expired (at most one time slice later), and the sweep frees the dead records.
TEST(Arbiter, AKilledTenantNeverHoldsTheGpu) {
  vgpu::testing::TempDir tmp("vgpu-arbiter-test");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  std::string dir = tmp.path();
  std::string path = dir + "/GPU-k.arbiter";
  ArbiterMapping a;
  ASSERT_EQ(ArbiterMapping::OpenOrCreate(path.c_str(), "GPU-k", &a), RegionError::kOk);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ArbiterMapping m;
    if (ArbiterMapping::OpenOrCreate(path.c_str(), "GPU-k", &m) != RegionError::kOk) _exit(1);
    ProcIdentity self = CurrentProcIdentity();
    int s = -1, p = -1;
    if (JoinArbiter(m.arbiter(), SliceKey("/child"), "child", Config(100), self, MonotonicNowNs(),
                    &s, &p) != RegionError::kOk) {
      _exit(2);
    }
    AdmitRequest req;
    req.slice = s;
    req.proc = p;
    req.now_ns = MonotonicNowNs();
    req.estimate_ns = 2 * kMs;
    if (!TryAdmit(m.arbiter(), req, self).admitted) _exit(3);
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(4);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_GE(a.arbiter()->header.owner, 0);
  kill(child, SIGKILL);
  int status;
  waitpid(child, &status, 0);
  ProcIdentity self = CurrentProcIdentity();
  int s = -1, p = -1;
  ASSERT_EQ(JoinArbiter(a.arbiter(), SliceKey("/parent"), "parent", Config(100), self,
                        MonotonicNowNs(), &s, &p),
            RegionError::kOk);
  EXPECT_TRUE(SweepArbiter(a.arbiter(), self, MonotonicNowNs()));
  EXPECT_EQ(a.arbiter()->header.owner, -1);
  int members = 0;
  for (const ArbiterSlice& slice : a.arbiter()->slices) members += slice.key != 0;
  EXPECT_EQ(members, 1);
  AdmitRequest req;
  req.slice = s;
  req.proc = p;
  req.now_ns = MonotonicNowNs();
  req.estimate_ns = 1 * kMs;
  AdmitDecision d = TryAdmit(a.arbiter(), req, self);
  EXPECT_TRUE(d.admitted);
  // Its queued work (2 ms) is the only wait.
  EXPECT_LE(d.start_ns, MonotonicNowNs() + 2 * kMs);
}

TEST(Arbiter, LockHolderKilledInsideTheLockIsRepaired) {
  vgpu::testing::TempDir tmp("vgpu-arbiter-test");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  std::string dir = tmp.path();
  std::string path = dir + "/GPU-r.arbiter";
  ArbiterMapping a;
  ASSERT_EQ(ArbiterMapping::OpenOrCreate(path.c_str(), "GPU-r", &a), RegionError::kOk);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ArbiterMapping m;
    if (ArbiterMapping::OpenOrCreate(path.c_str(), "GPU-r", &m) != RegionError::kOk) _exit(1);
    ProcIdentity self = CurrentProcIdentity();
    int s = -1, p = -1;
    JoinArbiter(m.arbiter(), SliceKey("/c"), "c", Config(50), self, MonotonicNowNs(), &s, &p);
    ArbiterLock lock(m.arbiter(), self, 1000);
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(4);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  kill(child, SIGKILL);
  int status;
  waitpid(child, &status, 0);
  ProcIdentity self = CurrentProcIdentity();
  {
    ArbiterLock lock(a.arbiter(), self, 1000);
    EXPECT_TRUE(lock.held());
  }
  EXPECT_EQ(a.arbiter()->header.repairs, 1u);
  for (const ArbiterSlice& slice : a.arbiter()->slices) EXPECT_EQ(slice.key, 0u);
}

TEST(Arbiter, SleepingGatesWakeOnAGenerationChange) {
  auto arbiter = std::make_unique<Arbiter>();
  InitializeArbiter(arbiter.get(), "GPU-w", true);
  uint32_t seen = arbiter->header.generation;
  auto t0 = std::chrono::steady_clock::now();
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::atomic_ref<uint32_t>(arbiter->header.generation).fetch_add(1);
    WakeArbiter(arbiter.get());
  });
  WaitArbiter(arbiter.get(), seen, MonotonicNowNs() + 5000 * kMs);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  waker.join();
  EXPECT_GE(waited, 0.04);
  EXPECT_LT(waited, 2.0);
  // A timeout with no change returns at the deadline.
  t0 = std::chrono::steady_clock::now();
  WaitArbiter(arbiter.get(), arbiter->header.generation, MonotonicNowNs() + 30 * kMs);
  waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(waited, 0.025);
}

}  // namespace
}  // namespace vgpu::shm
