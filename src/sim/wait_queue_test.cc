#include "sim/wait_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace vgpu::sim {
namespace {

// A one-resource world: `free` units; job j needs size[j] units. Every free-up is "on the freed
// node", so fits_freed is the plain fit check.
struct World {
  int free = 0;
  std::vector<int> size;
  std::vector<WaitQueue::JobId> started;
  int tries = 0;
  WaitQueue::TryStart try_start = [this](WaitQueue::JobId j) {
    ++tries;
    if (size[j] > free) return false;
    free -= size[j];
    started.push_back(j);
    return true;
  };
  WaitQueue::FitsFreed fits = [this](WaitQueue::JobId j) { return size[j] <= free; };
  // Jobs of equal size fit or not together.
  WaitQueue::ShapeId Shape(WaitQueue::JobId j) const {
    return static_cast<WaitQueue::ShapeId>(size[j]);
  }
};

TEST(WaitQueue, ParsesNames) {
  EXPECT_EQ(*ParseQueueDiscipline("fifo"), QueueDiscipline::kFifo);
  EXPECT_EQ(*ParseQueueDiscipline("backfill"), QueueDiscipline::kBackfill);
  auto bad = ParseQueueDiscipline("lifo");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("known: fifo, backfill"), std::string::npos);
  EXPECT_EQ(QueueName(QueueDiscipline::kBackfill), "backfill");
}

TEST(WaitQueue, FifoHoldsLaterPodsBehindTheHead) {
  World w;
  w.free = 4;
  w.size = {3, 3, 1, 1};  // job 0 starts; job 1 (3) does not fit; jobs 2, 3 (1) would fit
  WaitQueue q(QueueDiscipline::kFifo);
  EXPECT_TRUE(q.Arrive(0, w.Shape(0), w.try_start));
  EXPECT_FALSE(q.Arrive(1, w.Shape(1), w.try_start));
  const int tries_before = w.tries;
  EXPECT_FALSE(q.Arrive(2, w.Shape(2), w.try_start));  // joins the tail untried although it fits
  EXPECT_FALSE(q.Arrive(3, w.Shape(3), w.try_start));
  EXPECT_EQ(w.tries, tries_before);
  EXPECT_EQ(q.Waiting(), (std::vector<WaitQueue::JobId>{1, 2, 3}));
  // One unit frees (2 free): the head (3) still does not fit, nothing starts, and the head is not
  // retried in full (it only gets the cheap check).
  w.free += 1;
  EXPECT_EQ(q.Scan(w.fits, w.try_start), 0u);
  EXPECT_EQ(w.tries, tries_before);
  // Job 0 leaves: 5 free; 1, 2, 3 start in order.
  w.free += 3;
  EXPECT_EQ(q.Scan(w.fits, w.try_start), 3u);
  EXPECT_EQ(w.started, (std::vector<WaitQueue::JobId>{0, 1, 2, 3}));
  EXPECT_TRUE(q.empty());
}

TEST(WaitQueue, BackfillLetsLaterSmallerPodsPass) {
  World w;
  w.free = 4;
  w.size = {3, 2, 1, 1};
  WaitQueue q(QueueDiscipline::kBackfill);
  EXPECT_TRUE(q.Arrive(0, w.Shape(0), w.try_start));
  EXPECT_FALSE(q.Arrive(1, w.Shape(1), w.try_start));
  EXPECT_TRUE(q.Arrive(2, w.Shape(2), w.try_start));   // passes job 1
  EXPECT_FALSE(q.Arrive(3, w.Shape(3), w.try_start));  // nothing left
  EXPECT_EQ(q.Waiting(), (std::vector<WaitQueue::JobId>{1, 3}));
  w.free += 1;  // 1 free: job 1 (2) still waits, job 3 (1) passes it
  EXPECT_EQ(q.Scan(w.fits, w.try_start), 1u);
  EXPECT_EQ(q.Waiting(), (std::vector<WaitQueue::JobId>{1}));
  w.free += 3;
  EXPECT_EQ(q.Scan(w.fits, w.try_start), 1u);
  EXPECT_EQ(w.started, (std::vector<WaitQueue::JobId>{0, 2, 3, 1}));
}

TEST(WaitQueue, BackfillScansInArrivalOrder) {
  World w;
  w.free = 0;
  w.size = {2, 1, 1, 3};
  WaitQueue q(QueueDiscipline::kBackfill);
  for (WaitQueue::JobId j = 0; j < 4; ++j) EXPECT_FALSE(q.Arrive(j, w.Shape(j), w.try_start));
  w.free = 3;  // in arrival order: 0 (2) starts, 1 (1) starts, 2 and 3 wait
  EXPECT_EQ(q.Scan(w.fits, w.try_start), 2u);
  EXPECT_EQ(q.Waiting(), (std::vector<WaitQueue::JobId>{2, 3}));
}

TEST(WaitQueue, FifoTriesANewHeadInFull) {
  World w;
  w.free = 0;
  w.size = {1, 1};
  WaitQueue q(QueueDiscipline::kFifo);
  EXPECT_FALSE(q.Arrive(0, w.Shape(0), w.try_start));
  EXPECT_FALSE(q.Arrive(1, w.Shape(1), w.try_start));
  // A tried head gets only the cheap check: when it says no, nothing starts even though the
  // head would fit (the invariant says it cannot, so the check is trusted).
  w.free = 1;
  WaitQueue::FitsFreed never = [](WaitQueue::JobId) { return false; };
  EXPECT_EQ(q.Scan(never, w.try_start), 0u);
  // The head fits on a freed node and starts; the next head has never been tried in this state,
  // so it gets a full decision even though fits_freed would say no.
  w.free = 2;
  int calls = 0;
  WaitQueue::FitsFreed first_only = [&](WaitQueue::JobId j) {
    ++calls;
    return j == 0;
  };
  EXPECT_EQ(q.Scan(first_only, w.try_start), 2u);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(q.empty());
}

TEST(WaitQueue, BackfillScanCostDoesNotGrowWithTheQueue) {
  // 20,000 waiting pods of three shapes that never fit: a scan checks one pod per shape.
  World w;
  for (int i = 0; i < 20000; ++i) w.size.push_back(5 + i % 3);
  WaitQueue q(QueueDiscipline::kBackfill);
  for (WaitQueue::JobId j = 0; j < 20000; ++j) q.Arrive(j, w.Shape(j), w.try_start);
  const int tries = w.tries;
  int checks = 0;
  WaitQueue::FitsFreed count = [&](WaitQueue::JobId j) {
    ++checks;
    return w.fits(j);
  };
  for (int i = 0; i < 10; ++i) q.Scan(count, w.try_start);
  EXPECT_EQ(checks, 30);
  EXPECT_EQ(w.tries, tries);
  EXPECT_EQ(q.size(), 20000u);
  // Room for two pods of size 5 and one of 6 (17 units): they start in arrival order (jobs 0, 1,
  // 3; job 2 of size 7 does not fit after 0 and 1), and the scan stops checking each shape after
  // its first failure.
  w.free = 17;
  checks = 0;
  EXPECT_EQ(q.Scan(count, w.try_start), 3u);
  EXPECT_EQ(w.started, (std::vector<WaitQueue::JobId>{0, 1, 3}));
  EXPECT_LT(checks, 12);
}

// A plain pass over the whole queue in arrival order, for comparison.
std::vector<WaitQueue::JobId> NaiveBackfill(std::vector<WaitQueue::JobId>* waiting, World* w) {
  std::vector<WaitQueue::JobId> started, keep;
  for (WaitQueue::JobId j : *waiting) {
    if (w->size[j] <= w->free) {
      w->free -= w->size[j];
      started.push_back(j);
    } else {
      keep.push_back(j);
    }
  }
  *waiting = keep;
  return started;
}

TEST(WaitQueue, BackfillStartsWhatAPassOverTheWholeQueueWould) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL;
    auto next = [&x](int n) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      return static_cast<int>(x % static_cast<uint64_t>(n));
    };
    World fast, slow;
    WaitQueue q(QueueDiscipline::kBackfill);
    std::vector<WaitQueue::JobId> slow_waiting;
    std::vector<int> running;  // sizes held by started jobs, for departures
    for (WaitQueue::JobId j = 0; j < 400; ++j) {
      const int size = 1 + next(6);
      fast.size.push_back(size);
      slow.size.push_back(size);
      if (next(3) == 0 && fast.free < 20) {  // a departure frees some units on both
        const int freed = 1 + next(6);
        fast.free += freed;
        slow.free += freed;
        const size_t before = fast.started.size();
        q.Scan(fast.fits, fast.try_start);
        const auto s = NaiveBackfill(&slow_waiting, &slow);
        ASSERT_EQ(
            std::vector<WaitQueue::JobId>(fast.started.begin() + long(before), fast.started.end()),
            s)
            << "seed " << seed << " job " << j;
      }
      q.Arrive(j, fast.Shape(j), fast.try_start);
      if (size <= slow.free) {
        slow.free -= size;
      } else {
        slow_waiting.push_back(j);
      }
      ASSERT_EQ(q.Waiting(), slow_waiting) << "seed " << seed << " job " << j;
      ASSERT_EQ(fast.free, slow.free);
    }
  }
}

}  // namespace
}  // namespace vgpu::sim
