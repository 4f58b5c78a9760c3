// The robust mutexes that guard the shared regions of src/shm (a slice's accounting region, a
// GPU's arbiter): how each is made and taken, so that a holder that dies is noticed rather than
// waited for. Exception-free and allocation-free: libvgpu.so links it.
#pragma once

#include <pthread.h>

namespace vgpu::shm {

// Initializes `m` as a robust mutex, shared between processes when `process_shared`.
void InitRobustMutex(pthread_mutex_t* m, bool process_shared);

enum class RobustLock {
  kAcquired,   // held
  kOwnerDied,  // held; its last owner died holding it: repair what it guards, then call
               // pthread_mutex_consistent
  kTimedOut,   // not held: another holder kept it past the timeout
  kBroken,     // not held: the mutex is unusable (not recoverable, or not a mutex)
};

// Locks `m`, waiting up to `timeout_ms` (interrupted waits resume until the deadline).
RobustLock LockRobust(pthread_mutex_t* m, int timeout_ms);

}  // namespace vgpu::shm
