#include "simgpu/timeline.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

namespace vgpu::simgpu {
namespace {

constexpr uint64_t kMs = 1'000'000;

class TimelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = std::make_unique<SharedStateLayout>();
    std::memset(state_.get(), 0, sizeof(SharedStateLayout));
    state_->header.device_count = 1;
    state_->processes[0].pid = 100;
    state_->processes[1].pid = 200;
    state_->devices[0].settled_until_ns = kT0;
  }
  static constexpr uint64_t kT0 = 1'000'000 * kMs;  // an arbitrary, bucket-aligned start
  std::unique_ptr<SharedStateLayout> state_;
};

TEST_F(TimelineTest, KernelsRunOneAtATimeInLaunchOrder) {
  KernelTiming a = EnqueueKernel(state_.get(), 0, 0, kT0, 0, 5 * kMs);
  ASSERT_TRUE(a.queued);
  EXPECT_EQ(a.start_ns, kT0);
  EXPECT_EQ(a.end_ns, kT0 + 5 * kMs);
  // Another process launching 1 ms later waits for the device.
  KernelTiming b = EnqueueKernel(state_.get(), 0, 1, kT0 + kMs, 0, 3 * kMs);
  EXPECT_EQ(b.start_ns, kT0 + 5 * kMs);
  EXPECT_EQ(b.end_ns, kT0 + 8 * kMs);
  // A stream dependency later than the device is honoured.
  KernelTiming c = EnqueueKernel(state_.get(), 0, 0, kT0 + 2 * kMs, kT0 + 20 * kMs, kMs);
  EXPECT_EQ(c.start_ns, kT0 + 20 * kMs);
  EXPECT_EQ(FindProcessSlot(state_.get(), 200), 1);
  EXPECT_EQ(FindProcessSlot(state_.get(), 999), -1);
  ProcessTimelineStats pb = GetProcessTimelineStats(state_.get(), 0, 1);
  EXPECT_EQ(pb.busy_ns, 3 * kMs);
  EXPECT_EQ(pb.wait_ns, 4 * kMs);
  EXPECT_EQ(pb.kernels, 1u);
  ProcessTimelineStats pa = GetProcessTimelineStats(state_.get(), 0, 0);
  EXPECT_EQ(pa.busy_ns, 6 * kMs);
  EXPECT_EQ(pa.wait_ns, 18 * kMs);
}

TEST_F(TimelineTest, UtilizationCountsOnlyTimeThatHasPassed) {
  EnqueueKernel(state_.get(), 0, 0, kT0, 0, 500 * kMs);
  EnqueueKernel(state_.get(), 0, 1, kT0, 0, 500 * kMs);
  // Half way through the first kernel: the last 1 s window holds 250 ms of busy time.
  EXPECT_EQ(UtilizationPercent(state_.get(), 0, -1, kT0 + 250 * kMs, 1000 * kMs), 25u);
  // At 1 s both kernels have run back to back: 100% over the last second, 50% each.
  uint64_t t = kT0 + 1000 * kMs;
  EXPECT_EQ(UtilizationPercent(state_.get(), 0, -1, t, 1000 * kMs), 100u);
  EXPECT_EQ(UtilizationPercent(state_.get(), 0, 0, t, 1000 * kMs), 50u);
  EXPECT_EQ(UtilizationPercent(state_.get(), 0, 1, t, 1000 * kMs), 50u);
  // Idle for another half second.
  t += 500 * kMs;
  EXPECT_EQ(UtilizationPercent(state_.get(), 0, -1, t, 1000 * kMs), 50u);
  EXPECT_EQ(UtilizationPercent(state_.get(), 0, 0, t, 1000 * kMs), 0u);
  EXPECT_EQ(UtilizationPercent(state_.get(), 0, 1, t, 1000 * kMs), 50u);
  EXPECT_EQ(BusyInWindow(state_.get(), 0, -1, kT0, t), 1000 * kMs);
}

TEST_F(TimelineTest, UnalignedWindowsAreProrated) {
  EnqueueKernel(state_.get(), 0, 0, kT0 + 3 * kMs, 0, 4 * kMs);  // [3, 7) ms
  Settle(state_.get(), 0, kT0 + 100 * kMs);
  EXPECT_EQ(BusyInWindow(state_.get(), 0, -1, kT0, kT0 + 100 * kMs), 4 * kMs);
  // Half of the first bucket: its 4 ms are spread evenly over 10 ms.
  EXPECT_EQ(BusyInWindow(state_.get(), 0, -1, kT0 + 5 * kMs, kT0 + 100 * kMs), 2 * kMs);
}

TEST_F(TimelineTest, AFullQueueAsksTheCallerToRetry) {
  for (int i = 0; i < kPendingCapacity; ++i) {
    ASSERT_TRUE(EnqueueKernel(state_.get(), 0, 0, kT0, 0, kMs).queued);
  }
  KernelTiming t = EnqueueKernel(state_.get(), 0, 0, kT0, 0, kMs);
  EXPECT_FALSE(t.queued);
  EXPECT_EQ(t.retry_at_ns, kT0 + kMs);
  t = EnqueueKernel(state_.get(), 0, 0, kT0 + kMs, 0, kMs);  // the first kernel has finished
  EXPECT_TRUE(t.queued);
  EXPECT_EQ(t.start_ns, kT0 + kPendingCapacity * kMs);
}

TEST_F(TimelineTest, AFreedSlotDoesNotInheritBusyTime) {
  EnqueueKernel(state_.get(), 0, 1, kT0, 0, 100 * kMs);
  state_->processes[1].pid = 0;  // the process died and its slot was freed ...
  state_->processes[1].generation++;
  state_->processes[1].pid = 300;  // ... and reused
  EXPECT_EQ(UtilizationPercent(state_.get(), 0, 1, kT0 + 200 * kMs, 200 * kMs), 0u);
  EXPECT_EQ(UtilizationPercent(state_.get(), 0, -1, kT0 + 200 * kMs, 200 * kMs), 50u);
}

TEST(TimelineBuckets, LongIntervalsKeepOnlyTheHistoryWindow) {
  std::vector<UtilBucket> ring(kUtilBuckets);
  AddBusy(ring.data(), 0, 100ULL * kUtilBuckets * kUtilBucketNs);
  uint64_t total = 0;
  for (const UtilBucket& b : ring) total += b.busy_ns;
  EXPECT_EQ(total, kUtilBuckets * kUtilBucketNs);
}

TEST_F(TimelineTest, CopiesQueuePerDirectionAtLinkBandwidth) {
  CopyLink link;
  link.bytes_per_s[0] = 10'000'000'000;  // 10 GB/s: 10 MB take 1 ms
  link.bytes_per_s[1] = 20'000'000'000;
  link.coupling_pct = 50;
  CopyTiming a = EnqueueCopy(state_.get(), 0, kT0, 0, 10'000'000, CopyDir::kHostToDevice, link);
  EXPECT_EQ(a.start_ns, kT0);
  EXPECT_EQ(a.end_ns, kT0 + kMs);
  // The next H2D copy waits for the engine even when issued earlier than its end.
  CopyTiming b = EnqueueCopy(state_.get(), 0, kT0, 0, 10'000'000, CopyDir::kHostToDevice, link);
  EXPECT_EQ(b.start_ns, kT0 + kMs);
  EXPECT_EQ(b.end_ns, kT0 + 2 * kMs);
  // D2H runs beside it at half its bandwidth while H2D is busy (until kT0 + 2 ms), then in full:
  // 2 ms x 10 GB/s = 20 MB, then 20 MB more at 20 GB/s = 1 ms.
  CopyTiming c = EnqueueCopy(state_.get(), 0, kT0, 0, 40'000'000, CopyDir::kDeviceToHost, link);
  EXPECT_EQ(c.start_ns, kT0);
  EXPECT_EQ(c.end_ns, kT0 + 3 * kMs);
  EXPECT_EQ(state_->devices[0].copy_bytes_total[0], 20'000'000u);
  EXPECT_EQ(state_->devices[0].copy_bytes_total[1], 40'000'000u);
  // Stream order: a copy whose stream is ready later starts then.
  CopyTiming d =
      EnqueueCopy(state_.get(), 0, kT0, kT0 + 50 * kMs, 10'000'000, CopyDir::kHostToDevice, link);
  EXPECT_EQ(d.start_ns, kT0 + 50 * kMs);
}

TEST_F(TimelineTest, ZeroBandwidthCopiesAreInstant) {
  CopyLink link;
  CopyTiming a =
      EnqueueCopy(state_.get(), 0, kT0, kT0 + kMs, 1 << 30, CopyDir::kDeviceToHost, link);
  EXPECT_EQ(a.start_ns, kT0 + kMs);
  EXPECT_EQ(a.end_ns, kT0 + kMs);
  EXPECT_EQ(CopyDuration(link, CopyDir::kHostToDevice, 1 << 30, kT0, 0), 0u);
}

TEST_F(TimelineTest, AStuckKernelEndsOnlyWhenClearedAndWorkBehindItShifts) {
  // Armed for process 200: process 100's kernel is not the one that sticks.
  ASSERT_TRUE(ArmStuckKernel(state_.get(), 0, 200));
  KernelTiming a = EnqueueKernel(state_.get(), 0, 0, kT0, 0, kMs);
  EXPECT_EQ(a.end_ns, kT0 + kMs);
  KernelTiming stuck = EnqueueKernel(state_.get(), 0, 1, kT0, 0, kMs);
  EXPECT_EQ(stuck.start_ns, kT0 + kMs);
  EXPECT_GE(stuck.end_ns, kStuckBase);
  EXPECT_FALSE(ArmStuckKernel(state_.get(), 0, -1));  // one stuck kernel at a time
  // Work behind it (on the device, and in a stream waiting for it) never comes before it.
  KernelTiming behind = EnqueueKernel(state_.get(), 0, 0, kT0 + 2 * kMs, 0, 2 * kMs);
  EXPECT_EQ(behind.start_ns, stuck.end_ns);
  CopyLink link;
  link.bytes_per_s[0] = 1'000'000'000;  // 1 GB/s: 1 MB takes 1 ms
  CopyTiming copy = EnqueueCopy(state_.get(), 0, kT0 + 2 * kMs, stuck.end_ns, 1'000'000,
                                CopyDir::kHostToDevice, link);
  EXPECT_EQ(copy.start_ns, stuck.end_ns);
  EXPECT_EQ(ResolveTime(state_.get(), stuck.end_ns), stuck.end_ns);  // not yet cleared
  // An hour later it still runs: the running kernel is process 200's, stuck since kT0 + 1 ms.
  const uint64_t hour = 3'600'000 * kMs;
  RunningKernel r = FindRunningKernel(state_.get(), 0, kT0 + hour);
  ASSERT_TRUE(r.running);
  EXPECT_TRUE(r.stuck);
  EXPECT_EQ(r.pid, 200);
  EXPECT_EQ(r.start_ns, kT0 + kMs);
  EXPECT_EQ(UtilizationPercent(state_.get(), 0, 1, kT0 + hour, 1000 * kMs), 100u);
  // Cleared at C: the stuck kernel ends at C, the kernel behind it 2 ms later, and a time kept
  // by a process (the copy's end) resolves the same way.
  const uint64_t c = kT0 + hour + 5 * kMs;
  ASSERT_TRUE(ClearStuckKernel(state_.get(), 0, c));
  EXPECT_EQ(ResolveTime(state_.get(), stuck.end_ns), c);
  EXPECT_EQ(ResolveTime(state_.get(), behind.end_ns), c + 2 * kMs);
  EXPECT_EQ(ResolveTime(state_.get(), copy.end_ns), c + kMs);
  EXPECT_EQ(state_->devices[0].busy_until_ns, c + 2 * kMs);
  EXPECT_EQ(state_->devices[0].copy_busy_until_ns[0], c + kMs);
  KernelTiming after = EnqueueKernel(state_.get(), 0, 0, c + kMs, 0, kMs);
  EXPECT_EQ(after.start_ns, c + 2 * kMs);
  EXPECT_FALSE(FindRunningKernel(state_.get(), 0, c + 10 * kMs).running);
  // The stuck kernel counts as its own 1 ms in the process's totals.
  EXPECT_EQ(GetProcessTimelineStats(state_.get(), 0, 1).busy_ns, kMs);
  EXPECT_FALSE(ClearStuckKernel(state_.get(), 0, c + 20 * kMs));  // nothing to clear
  // A second episode works the same way, with times of its own.
  ASSERT_TRUE(ArmStuckKernel(state_.get(), 0, -1));
  KernelTiming second = EnqueueKernel(state_.get(), 0, 0, c + 30 * kMs, 0, kMs);
  EXPECT_GT(second.end_ns, stuck.end_ns);
  ASSERT_TRUE(ClearStuckKernel(state_.get(), 0, c + 40 * kMs));
  EXPECT_EQ(ResolveTime(state_.get(), second.end_ns), c + 40 * kMs);
  EXPECT_EQ(ResolveTime(state_.get(), behind.end_ns), c + 2 * kMs);  // the first's still hold
}

}  // namespace
}  // namespace vgpu::simgpu
