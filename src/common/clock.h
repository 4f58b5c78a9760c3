// Clock: the source of time, behind an interface so components run on simulated time in tests.
//
// Contract:
// - NowNanos() is monotonic: it never goes backwards. The epoch is arbitrary.
// - MonotonicClock reads CLOCK_MONOTONIC (a vDSO call, no system call on Linux x86-64).
// - SimulatedClock only moves when told to (Advance/Set); SleepFor advances it instead of
//   blocking. It is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>

namespace vgpu {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowNanos() const = 0;
  // Waits until NowNanos() has advanced by at least `nanos`.
  virtual void SleepFor(int64_t nanos) = 0;
};

class MonotonicClock final : public Clock {
 public:
  int64_t NowNanos() const override {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  void SleepFor(int64_t nanos) override {
    if (nanos <= 0) return;
    timespec ts{static_cast<time_t>(nanos / 1'000'000'000),
                static_cast<long>(nanos % 1'000'000'000)};
    while (nanosleep(&ts, &ts) != 0) {
    }
  }
  // The process-wide instance.
  static MonotonicClock& Instance() {
    static MonotonicClock clock;
    return clock;
  }
};

class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(int64_t start_nanos = 0) : now_(start_nanos) {}
  int64_t NowNanos() const override { return now_.load(std::memory_order_acquire); }
  void SleepFor(int64_t nanos) override { Advance(nanos); }
  void Advance(int64_t nanos) {
    if (nanos > 0) now_.fetch_add(nanos, std::memory_order_acq_rel);
  }
  // Moves the clock to `nanos` if that is later than now; earlier values are ignored.
  void AdvanceTo(int64_t nanos) {
    int64_t cur = now_.load(std::memory_order_acquire);
    while (nanos > cur && !now_.compare_exchange_weak(cur, nanos, std::memory_order_acq_rel)) {
    }
  }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace vgpu
