#include "shm/robust_mutex.h"

#include <errno.h>
#include <time.h>

namespace vgpu::shm {

void InitRobustMutex(pthread_mutex_t* m, bool process_shared) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr,
                               process_shared ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(m, &attr);
  pthread_mutexattr_destroy(&attr);
}

RobustLock LockRobust(pthread_mutex_t* m, int timeout_ms) {
  int rc = pthread_mutex_trylock(m);
  if (rc == EBUSY) {
    struct timespec deadline;
    ::clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += static_cast<long>(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec += 1;
      deadline.tv_nsec -= 1000000000L;
    }
    do {
      rc = pthread_mutex_timedlock(m, &deadline);
    } while (rc == EINTR);
  }
  switch (rc) {
    case 0:
      return RobustLock::kAcquired;
    case EOWNERDEAD:
      return RobustLock::kOwnerDied;
    case ETIMEDOUT:
      return RobustLock::kTimedOut;
    default:
      return RobustLock::kBroken;
  }
}

}  // namespace vgpu::shm
