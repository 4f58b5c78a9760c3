// Charges, slots, the robust lock and dead-process recovery, across real processes (fork).
#include "shm/region_ops.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "shm/region_file.h"
#include "support/wait_for.h"

namespace vgpu::shm {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;

// An anonymous MAP_SHARED region: shared with forked children like a file would be.
class SharedRegion {
 public:
  explicit SharedRegion(uint64_t limit) {
    void* p =
        mmap(nullptr, sizeof(Region), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    region_ = static_cast<Region*>(p);
    RegionConfig c{};
    c.device_count = 1;
    for (uint64_t& l : c.memory_limit) l = kNoLimit;
    c.memory_limit[0] = limit;
    InitializeRegion(region_, c, true);
  }
  ~SharedRegion() { munmap(region_, sizeof(Region)); }
  Region* get() { return region_; }

 private:
  Region* region_;
};

uint64_t SumOfSlots(const Region* r, int dev) {
  uint64_t sum = 0;
  for (const ProcSlot& s : r->slots) {
    if (s.pid != 0) sum += s.used[dev];
  }
  return sum;
}

TEST(RegionOps, ChargeHoldsExactlyTheLimit) {
  SharedRegion r(10 * kMiB);
  ProcIdentity self = CurrentProcIdentity();
  int slot = -1;
  ASSERT_EQ(ClaimSlot(r.get(), self, &slot), RegionError::kOk);
  EXPECT_EQ(Charge(r.get(), slot, 0, 10 * kMiB, kNoLimit, self), RegionError::kOk);
  EXPECT_EQ(Charge(r.get(), slot, 0, 1, kNoLimit, self), RegionError::kOverLimit);
  Uncharge(r.get(), slot, 0, 1, self);
  EXPECT_EQ(Charge(r.get(), slot, 0, 1, kNoLimit, self), RegionError::kOk);
  EXPECT_EQ(DeviceUsed(r.get(), 0), 10 * kMiB);
  EXPECT_EQ(SlotUsed(r.get(), slot, 0), 10 * kMiB);
}

TEST(RegionOps, ProcessLimitCanOnlyLower) {
  SharedRegion r(10 * kMiB);
  ProcIdentity self = CurrentProcIdentity();
  int slot = -1;
  ASSERT_EQ(ClaimSlot(r.get(), self, &slot), RegionError::kOk);
  EXPECT_EQ(Charge(r.get(), slot, 0, 5 * kMiB, 4 * kMiB, self), RegionError::kOverLimit);
  EXPECT_EQ(Charge(r.get(), slot, 0, 4 * kMiB, 4 * kMiB, self), RegionError::kOk);
  EXPECT_EQ(Charge(r.get(), slot, 0, 7 * kMiB, 100 * kMiB, self), RegionError::kOverLimit);
  EXPECT_EQ(Charge(r.get(), slot, 0, 6 * kMiB, 100 * kMiB, self), RegionError::kOk);
}

TEST(RegionOps, HugeChargesDoNotWrapAround) {
  SharedRegion r(kNoLimit - 1);
  ProcIdentity self = CurrentProcIdentity();
  int slot = -1;
  ASSERT_EQ(ClaimSlot(r.get(), self, &slot), RegionError::kOk);
  EXPECT_EQ(Charge(r.get(), slot, 0, 100, kNoLimit, self), RegionError::kOk);
  EXPECT_EQ(Charge(r.get(), slot, 0, kNoLimit - 50, kNoLimit, self), RegionError::kOverLimit);
  EXPECT_EQ(Charge(r.get(), slot, 0, kNoLimit, kNoLimit, self), RegionError::kOverLimit);
}

TEST(RegionOps, UnchargeSaturatesAndNeverDrainsOthers) {
  SharedRegion r(100 * kMiB);
  ProcIdentity self = CurrentProcIdentity();
  ProcIdentity other = self;
  other.pid = self.pid + 1000000;  // a fake second process in the same region
  int mine = -1, theirs = -1;
  ASSERT_EQ(ClaimSlot(r.get(), self, &mine), RegionError::kOk);
  ASSERT_EQ(ClaimSlot(r.get(), other, &theirs), RegionError::kOk);
  ASSERT_EQ(Charge(r.get(), theirs, 0, 30 * kMiB, kNoLimit, other), RegionError::kOk);
  ASSERT_EQ(Charge(r.get(), mine, 0, 10 * kMiB, kNoLimit, self), RegionError::kOk);
  Uncharge(r.get(), mine, 0, 50 * kMiB, self);  // more than held
  EXPECT_EQ(SlotUsed(r.get(), mine, 0), 0u);
  EXPECT_EQ(DeviceUsed(r.get(), 0), 30 * kMiB);
  Uncharge(r.get(), mine, 0, 1, self);
  EXPECT_EQ(DeviceUsed(r.get(), 0), 30 * kMiB);
  // A slot that is not ours cannot be uncharged by us.
  Uncharge(r.get(), theirs, 0, 30 * kMiB, self);
  EXPECT_EQ(DeviceUsed(r.get(), 0), 30 * kMiB);
}

TEST(RegionOps, ChargeUpToGrantsWhatFits) {
  SharedRegion r(10 * kMiB);
  ProcIdentity self = CurrentProcIdentity();
  int slot = -1;
  ASSERT_EQ(ClaimSlot(r.get(), self, &slot), RegionError::kOk);
  EXPECT_EQ(ChargeUpTo(r.get(), slot, 0, 4 * kMiB, kNoLimit, self), 4 * kMiB);
  EXPECT_EQ(ChargeUpTo(r.get(), slot, 0, 8 * kMiB, kNoLimit, self), 6 * kMiB);
  EXPECT_EQ(ChargeUpTo(r.get(), slot, 0, 1, kNoLimit, self), 0u);
  EXPECT_EQ(DeviceUsed(r.get(), 0), 10 * kMiB);
}

TEST(RegionOps, ReclaimSlotOfThisImageAfterExec) {
  SharedRegion r(10 * kMiB);
  ProcIdentity self = CurrentProcIdentity();
  int slot = -1;
  ASSERT_EQ(ClaimSlot(r.get(), self, &slot), RegionError::kOk);
  ASSERT_EQ(Charge(r.get(), slot, 0, 10 * kMiB, kNoLimit, self), RegionError::kOk);
  // The same process (same pid and start time) claims again, as after exec.
  int again = -1;
  ASSERT_EQ(ClaimSlot(r.get(), self, &again), RegionError::kOk);
  EXPECT_EQ(DeviceUsed(r.get(), 0), 0u);
}

TEST(RegionOps, ReleaseSlotGivesEverythingBack) {
  SharedRegion r(10 * kMiB);
  ProcIdentity self = CurrentProcIdentity();
  int slot = -1;
  ASSERT_EQ(ClaimSlot(r.get(), self, &slot), RegionError::kOk);
  ASSERT_EQ(Charge(r.get(), slot, 0, 7 * kMiB, kNoLimit, self), RegionError::kOk);
  ReleaseSlot(r.get(), slot, self);
  EXPECT_EQ(DeviceUsed(r.get(), 0), 0u);
  EXPECT_EQ(r.get()->slots[slot].pid, 0);
}

// A child charges memory and dies without releasing it; the parent's next charge that does not
// fit sweeps the dead slot and succeeds. The child is left a zombie on purpose (not yet waited
// for): a zombie is dead.
TEST(RegionOps, DeadProcessIsSweptWhenRoomIsNeeded) {
  SharedRegion r(10 * kMiB);
  pid_t child = fork();
  if (child == 0) {
    ProcIdentity me = CurrentProcIdentity();
    int slot = -1;
    if (ClaimSlot(r.get(), me, &slot) != RegionError::kOk) _exit(1);
    if (Charge(r.get(), slot, 0, 8 * kMiB, kNoLimit, me) != RegionError::kOk) _exit(2);
    _exit(0);
  }
  // Wait until the child has exited but do not reap it yet.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);
  ASSERT_EQ(info.si_status, 0);
  EXPECT_EQ(DeviceUsed(r.get(), 0), 8 * kMiB);
  ProcIdentity self = CurrentProcIdentity();
  int slot = -1;
  ASSERT_EQ(ClaimSlot(r.get(), self, &slot), RegionError::kOk);
  EXPECT_EQ(Charge(r.get(), slot, 0, 5 * kMiB, kNoLimit, self), RegionError::kOk);
  EXPECT_EQ(DeviceUsed(r.get(), 0), 5 * kMiB);
  EXPECT_EQ(r.get()->header.reclaimed, 1u);
  int status = 0;
  waitpid(child, &status, 0);
}

TEST(RegionOps, ReusedPidIsDetectedByStartTime) {
  SharedRegion r(10 * kMiB);
  ProcIdentity self = CurrentProcIdentity();
  // Our parent is alive, but a slot that claims its pid with another start time is stale.
  ProcIdentity impostor{static_cast<int32_t>(getppid()), 12345, self.pid_ns};
  int stale = -1;
  ASSERT_EQ(ClaimSlot(r.get(), impostor, &stale), RegionError::kOk);
  ASSERT_EQ(Charge(r.get(), stale, 0, 9 * kMiB, kNoLimit, impostor), RegionError::kOk);
  EXPECT_EQ(SweepDeadSlots(r.get(), self), 1);
  EXPECT_EQ(DeviceUsed(r.get(), 0), 0u);
  // A slot holding the parent with its real start time is alive.
  ProcIdentity parent{static_cast<int32_t>(getppid()), ReadStartTime(getppid()), self.pid_ns};
  ASSERT_EQ(ClaimSlot(r.get(), parent, &stale), RegionError::kOk);
  EXPECT_EQ(SweepDeadSlots(r.get(), self), 0);
}

TEST(RegionOps, SlotsOfAnotherPidNamespaceAreNeverReclaimed) {
  SharedRegion r(10 * kMiB);
  ProcIdentity self = CurrentProcIdentity();
  ProcIdentity foreign{999999, 1, self.pid_ns + 1};
  int slot = -1;
  ASSERT_EQ(ClaimSlot(r.get(), foreign, &slot), RegionError::kOk);
  EXPECT_EQ(SweepDeadSlots(r.get(), self), 0);
}

TEST(RegionOps, MaybeSweepIsThrottled) {
  SharedRegion r(10 * kMiB);
  ProcIdentity self = CurrentProcIdentity();
  ProcIdentity ghost{0x3fffffff, 1, self.pid_ns};  // no such pid
  int slot = -1;
  r.get()->header.last_sweep_ns = MonotonicNowNs();
  ASSERT_EQ(ClaimSlot(r.get(), ghost, &slot), RegionError::kOk);
  EXPECT_EQ(MaybeSweep(r.get(), self), 0);  // swept just now
  std::this_thread::sleep_for(std::chrono::nanoseconds(kSweepIntervalNs + 1000000));
  EXPECT_EQ(MaybeSweep(r.get(), self), 1);
}

// A child is killed while it holds the region lock (the critical-section delay keeps it inside
// for a long time). The parent's next lock finds EOWNERDEAD, repairs, and the totals match the
// live slots.
TEST(RegionOps, HolderKilledInsideTheCriticalSectionDoesNotWedgeTheLock) {
  SharedRegion r(100 * kMiB);
  ProcIdentity self = CurrentProcIdentity();
  int mine = -1;
  ASSERT_EQ(ClaimSlot(r.get(), self, &mine), RegionError::kOk);
  ASSERT_EQ(Charge(r.get(), mine, 0, 10 * kMiB, kNoLimit, self), RegionError::kOk);
  pid_t child = fork();
  if (child == 0) {
    ProcIdentity me = CurrentProcIdentity();
    int slot = -1;
    if (ClaimSlot(r.get(), me, &slot) != RegionError::kOk) _exit(1);
    SetCriticalSectionDelayForTest(10 * 1000 * 1000);  // 10 s inside the lock
    Charge(r.get(), slot, 0, 20 * kMiB, kNoLimit, me);
    _exit(0);
  }
  // Wait until the child is inside the critical section: device total moved, slot not yet.
  vgpu::testing::WaitFor([&] { return DeviceUsed(r.get(), 0) == 30 * kMiB; },
                         std::chrono::seconds(5), std::chrono::milliseconds(1));
  ASSERT_EQ(DeviceUsed(r.get(), 0), 30 * kMiB);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  auto start = std::chrono::steady_clock::now();
  {
    RegionLock lock(r.get(), self, 2000);
    ASSERT_TRUE(lock.held());
    EXPECT_TRUE(lock.repaired());
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  EXPECT_EQ(DeviceUsed(r.get(), 0), 10 * kMiB);
  EXPECT_EQ(SumOfSlots(r.get(), 0), 10 * kMiB);
  EXPECT_EQ(r.get()->header.repairs, 1u);
  EXPECT_EQ(Charge(r.get(), mine, 0, 90 * kMiB, kNoLimit, self), RegionError::kOk);
}

// Processes race to charge under one limit; the sum of what they got never exceeds it. Each
// child reports what it got in its own cell (no cross-process read-modify-write in the test).
TEST(RegionOps, RacingProcessesNeverExceedTheLimit) {
  constexpr int kProcs = 8;
  constexpr uint64_t kLimit = 64 * kMiB;
  for (int round = 0; round < 20; ++round) {
    SharedRegion r(kLimit);
    auto* granted = static_cast<uint64_t*>(
        mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    std::vector<pid_t> children;
    for (int p = 0; p < kProcs; ++p) {
      pid_t c = fork();
      if (c == 0) {
        ProcIdentity me = CurrentProcIdentity();
        int slot = -1;
        if (ClaimSlot(r.get(), me, &slot) != RegionError::kOk) _exit(1);
        uint64_t mine = 0;
        for (int i = 0; i < 64; ++i) {
          uint64_t size = (1 + (i * 7 + p) % 5) * kMiB / 2;
          if (Charge(r.get(), slot, 0, size, kNoLimit, me) == RegionError::kOk) mine += size;
        }
        granted[p] = mine;
        // Stay alive until every child is done: an exited child's charges would be swept and
        // handed to the others, which is right but not what this test counts.
        volatile uint64_t* done = granted + kProcs;
        done[p] = 1;
        vgpu::testing::WaitFor(
            [&] {
              int finished = 0;
              for (int q = 0; q < kProcs; ++q) finished += done[q] == 1;
              return finished == kProcs;
            },
            std::chrono::seconds(60), std::chrono::milliseconds(1));
        _exit(0);
      }
      children.push_back(c);
    }
    for (pid_t c : children) {
      int status = 0;
      waitpid(c, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    uint64_t total = 0;
    for (int p = 0; p < kProcs; ++p) total += granted[p];
    EXPECT_LE(total, kLimit);
    EXPECT_EQ(r.get()->header.reclaimed, 0u);
    EXPECT_GE(total, kLimit - 3 * kMiB);  // they did fill it
    munmap(granted, 4096);
  }
}

// Counters (minor 4): a slot's counters count in the slice's totals while it lives and after it
// is freed (released, or reclaimed from a dead process), and the peak charge stays.
TEST(RegionOps, CountersSurviveReleaseAndReclaimAndPeakStays) {
  SharedRegion r(10 * kMiB);
  pid_t child = fork();
  if (child == 0) {
    ProcIdentity me = CurrentProcIdentity();
    int slot = -1;
    if (ClaimSlot(r.get(), me, &slot) != RegionError::kOk) _exit(1);
    r.get()->slots[slot].counters.launches = 7;
    r.get()->slots[slot].counters.copy_bytes[kCopyKindDeviceToHost] = 4096;
    if (Charge(r.get(), slot, 0, 6 * kMiB, kNoLimit, me) != RegionError::kOk) _exit(2);
    _exit(0);  // dies holding its slot
  }
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);
  ASSERT_EQ(info.si_status, 0);
  ProcIdentity self = CurrentProcIdentity();
  int slot = -1;
  ASSERT_EQ(ClaimSlot(r.get(), self, &slot), RegionError::kOk);
  r.get()->slots[slot].counters.launches = 5;
  r.get()->slots[slot].counters.allocations = 2;
  SliceCounters c;
  ASSERT_TRUE(ReadSliceCounters(r.get(), &c));
  EXPECT_EQ(c.processes, 2);  // the dead child is not swept yet
  EXPECT_EQ(c.totals.launches, 12u);
  EXPECT_EQ(c.peak_used[0], 6 * kMiB);
  // The sweep folds the dead child's counters into the totals: nothing is lost.
  EXPECT_EQ(SweepDeadSlots(r.get(), self), 1);
  ASSERT_TRUE(ReadSliceCounters(r.get(), &c));
  EXPECT_EQ(c.processes, 1);
  EXPECT_EQ(c.totals.launches, 12u);
  EXPECT_EQ(c.totals.copy_bytes[kCopyKindDeviceToHost], 4096u);
  EXPECT_EQ(r.get()->header.telemetry.folded.launches, 7u);
  EXPECT_EQ(Charge(r.get(), slot, 0, 3 * kMiB, kNoLimit, self), RegionError::kOk);
  ReleaseSlot(r.get(), slot, self);
  ASSERT_TRUE(ReadSliceCounters(r.get(), &c));
  EXPECT_EQ(c.processes, 0);
  EXPECT_EQ(c.totals.launches, 12u);
  EXPECT_EQ(c.totals.allocations, 2u);
  EXPECT_EQ(DeviceUsed(r.get(), 0), 0u);
  EXPECT_EQ(c.peak_used[0], 6 * kMiB);  // the peak outlives the charges
  EXPECT_EQ(r.get()->header.telemetry.fold_seq % 2, 0u);
  // A fold in progress (odd sequence) makes the reader give up rather than read a torn sum.
  r.get()->header.telemetry.fold_seq += 1;
  EXPECT_FALSE(ReadSliceCounters(r.get(), &c));
  int status = 0;
  waitpid(child, &status, 0);
}

}  // namespace
}  // namespace vgpu::shm
