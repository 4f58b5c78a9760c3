#include "shm/robust_mutex.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

namespace vgpu::shm {
namespace {

TEST(RobustMutex, TakenFreeTimedOutWhileHeldAndReportedWhenItsOwnerDied) {
  void* mem = mmap(nullptr, sizeof(pthread_mutex_t), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* m = static_cast<pthread_mutex_t*>(mem);
  InitRobustMutex(m, /*process_shared=*/true);
  ASSERT_EQ(LockRobust(m, 100), RobustLock::kAcquired);

  // Held by this thread: another one waits its timeout and gives up.
  RobustLock other = RobustLock::kAcquired;
  std::thread([&] { other = LockRobust(m, 50); }).join();
  EXPECT_EQ(other, RobustLock::kTimedOut);
  ASSERT_EQ(pthread_mutex_unlock(m), 0);

  // A process that dies holding it: the next locker is told, holds it, and makes it whole.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pthread_mutex_lock(m);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_EQ(LockRobust(m, 1000), RobustLock::kOwnerDied);
  ASSERT_EQ(pthread_mutex_consistent(m), 0);
  ASSERT_EQ(pthread_mutex_unlock(m), 0);
  EXPECT_EQ(LockRobust(m, 100), RobustLock::kAcquired);
  ASSERT_EQ(pthread_mutex_unlock(m), 0);
  munmap(mem, sizeof(pthread_mutex_t));
}

}  // namespace
}  // namespace vgpu::shm
