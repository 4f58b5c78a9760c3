#include "common/mutex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <thread>
#include <vector>

namespace vgpu {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A counter and a flag guarded as the daemon guards its state (checked by the thread_safety test).
struct Guarded {
  Mutex mu;
  std::condition_variable cv;
  int count VGPU_GUARDED_BY(mu) = 0;
  bool ready VGPU_GUARDED_BY(mu) = false;

  void Add() VGPU_EXCLUDES(mu) {
    MutexLock lock(mu);
    ++count;
  }
  void SetReady() VGPU_EXCLUDES(mu) {
    {
      MutexLock lock(mu);
      ready = true;
    }
    cv.notify_all();
  }
  int Count() VGPU_EXCLUDES(mu) {
    MutexLock lock(mu);
    return count;
  }
};

TEST(Mutex, MutexLockExcludesTheOtherThreads) {
  Guarded g;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) g.Add();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(g.Count(), 40000);
}

// The setter takes the mutex while the waiter sleeps (so the wait released it); when the wait
// returns the mutex is held again (another thread's Add() waits for the end of the scope).
TEST(Mutex, WaitReleasesTheMutexWhileItSleepsAndHoldsItAgainOnReturn) {
  Guarded g;
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(20));
    g.SetReady();
  });
  std::thread adder;
  {
    MutexLock lock(g.mu);
    lock.Wait(g.cv, [&]() VGPU_REQUIRES(g.mu) { return g.ready; });
    EXPECT_TRUE(g.ready);
    adder = std::thread([&] { g.Add(); });
    std::this_thread::sleep_for(milliseconds(20));
    EXPECT_EQ(g.count, 0);
  }
  adder.join();
  setter.join();
  EXPECT_EQ(g.Count(), 1);
}

TEST(Mutex, WaitForAndWaitUntilTimeOutWithThePredicateFalse) {
  Guarded g;
  MutexLock lock(g.mu);
  auto t0 = steady_clock::now();
  EXPECT_FALSE(lock.WaitFor(g.cv, milliseconds(30), [&]() VGPU_REQUIRES(g.mu) { return g.ready; }));
  EXPECT_GE(steady_clock::now() - t0, milliseconds(30));
  t0 = steady_clock::now();
  EXPECT_FALSE(
      lock.WaitUntil(g.cv, t0 + milliseconds(30), [&]() VGPU_REQUIRES(g.mu) { return g.ready; }));
  EXPECT_GE(steady_clock::now() - t0, milliseconds(30));
  g.ready = true;
  EXPECT_TRUE(lock.WaitFor(g.cv, milliseconds(30), [&]() VGPU_REQUIRES(g.mu) { return g.ready; }));
  EXPECT_TRUE(
      lock.WaitUntil(g.cv, steady_clock::now(), [&]() VGPU_REQUIRES(g.mu) { return g.ready; }));
}

}  // namespace
}  // namespace vgpu
