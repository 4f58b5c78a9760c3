// Estimated device time per launch site, learned from measured completions.
//
// The launch gate charges a launch its estimate when it admits it and corrects the charge when it
// measures the real duration at completion; the estimates also bound how much work a slice may
// queue ahead. A site is keyed by what determines its duration best without looking inside the
// kernel: (function, grid size) for kernels, the executable graph for graph launches.
//
// Estimate: the first measurement, then an exponentially weighted moving average (weight 1/4 for
// each new measurement), so constant kernels are estimated exactly after one completion. Sites
// never measured get the average of all measurements of the process (`known` false).
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

  Estimate Get(uint64_t key) const;
  void Update(uint64_t key, uint64_t measured_ns);
  void Clear();

  static uint64_t KernelKey(const void* function, uint64_t grid_blocks);
  static uint64_t GraphKey(const void* exec);

 private:
  struct Entry {
    uint64_t key;
    uint64_t ns;
    uint64_t stamp;
  };
  static constexpr int kCapacity = 4096;
  static constexpr int kProbe = 16;

  Entry entries_[kCapacity] = {};
  uint64_t stamp_ = 0;
  uint64_t average_ns_ = 0;
  bool any_ = false;
};

}  // namespace vgpu::intercept
