// Estimated device time per launch site, learned from measured completions.
//
// The launch gate charges a launch its estimate when it admits it and corrects the charge when it
// measures the real duration at completion; the estimates also bound how much work a slice may
// queue ahead. A site is keyed by what determines its duration best without looking inside the
// kernel: (function, grid size) for kernels, the executable graph for graph launches.
//
// Estimate: the first measurement, then a moving average that takes 1/4 of a longer measurement
// and 1/2 of a shorter one (a measurement errs only on the long side: a wait it could not see),
// so constant kernels are estimated exactly after one clean completion. A site
// never measured takes the estimate of its family (the same function with another grid size)
// when there is one; otherwise it is unknown (`known` false, ns 0).
//
// Open addressing over a fixed table (no allocation); when a probe window is full the oldest
// entry of the window is replaced. Not thread-safe: the gate calls it under its mutex.
#pragma once

#include <cstdint>

namespace vgpu::intercept {

class KernelEstimates {
 public:
  struct Estimate {
    uint64_t ns = 0;
    bool known = false;
  };

  Estimate Get(uint64_t key, uint64_t family) const;
  // Adds a measurement of `key` (and of its family). Returns false when the measurement was set
  // aside as an outlier: more than a quarter above the estimate (a measurement can only be too
  // long, by a wait it could not see), unless it is the 8th such in a row (the kernel got longer).
  bool Update(uint64_t key, uint64_t family, uint64_t measured_ns);
  void Clear();

  static uint64_t KernelKey(const void* function, uint64_t grid_blocks);
  static uint64_t FamilyKey(const void* function);
  static uint64_t GraphKey(const void* exec);

 private:
  struct Entry {
    uint64_t key;
    uint64_t ns;
    uint64_t stamp;
    uint64_t high_ns;  // smallest of the outliers in the current run
    uint32_t highs;    // outliers in a row
  };
  static constexpr int kCapacity = 4096;
  static constexpr int kProbe = 16;
  static constexpr uint64_t kSlackNs = 2000;
  static constexpr uint32_t kHighsToAccept = 8;

  const Entry* Find(uint64_t key) const;
  bool Put(uint64_t key, uint64_t measured_ns);

  Entry entries_[kCapacity] = {};
  uint64_t stamp_ = 0;
};

}  // namespace vgpu::intercept
