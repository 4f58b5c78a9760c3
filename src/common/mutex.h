// Mutex and MutexLock: std::mutex and a scoped lock over it that clang's thread-safety analysis
// understands (common/thread_annotations.h). libstdc++'s std::mutex and std::lock_guard carry no
// annotations, so data marked VGPU_GUARDED_BY(a std::mutex) could not be checked.
//
//   mutable vgpu::Mutex mu_;
//   int count_ VGPU_GUARDED_BY(mu_) = 0;
//   ...
//   vgpu::MutexLock lock(mu_);  // held until the end of the scope
//   ++count_;
//
// Waiting on a condition variable: a std::condition_variable waits through the lock, with a
// predicate that runs with the mutex held and so says VGPU_REQUIRES:
//
//   vgpu::MutexLock lock(mu_);
//   lock.WaitFor(cv_, std::chrono::milliseconds(ms), [&]() VGPU_REQUIRES(mu_) { return stop_; });
//
// The wait releases the mutex while it sleeps and holds it again when it returns, as
// std::condition_variable::wait does with a std::unique_lock; to the analysis the mutex stays
// held across the call (it is, whenever the caller's code runs). Notifying needs no lock.
//
// Thread safety: Mutex is std::mutex (not recursive; locking it twice on one thread deadlocks).
// A MutexLock belongs to the thread that made it. No allocation, no exception of their own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "common/thread_annotations.h"

namespace vgpu {

class VGPU_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds `mu` from its construction to its destruction.
class VGPU_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) VGPU_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() VGPU_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Waits on `cv` until `stop_waiting()` is true (std::condition_variable::wait).
  template <typename Predicate>
  void Wait(std::condition_variable& cv, Predicate stop_waiting) {
    cv.wait(lock_, std::move(stop_waiting));
  }
  // The same, for at most `timeout`; returns stop_waiting()'s last value (false: timed out).
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& timeout,
               Predicate stop_waiting) {
    return cv.wait_for(lock_, timeout, std::move(stop_waiting));
  }
  // The same, until `deadline`; returns stop_waiting()'s last value (false: timed out).
  template <typename Clock, typename Duration, typename Predicate>
  bool WaitUntil(std::condition_variable& cv,
                 const std::chrono::time_point<Clock, Duration>& deadline, Predicate stop_waiting) {
    return cv.wait_until(lock_, deadline, std::move(stop_waiting));
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace vgpu
