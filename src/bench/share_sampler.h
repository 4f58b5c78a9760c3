// The simulated GPU's own count of each tenant's device time, for `vgpu bench share --sim`: the
// per-process busy time of the simulated timeline (simgpu/timeline.h), sampled while the tenants
// run (the timeline keeps 5 s of history).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace vgpu::bench {

class ShareSampler {
 public:
  // Opens the simulated GPU's state named by the environment (VGPU_SIMGPU_STATE, ...); nullptr
  // when it cannot (a bad configuration, or the state does not exist).
  static std::unique_ptr<ShareSampler> Open(const std::vector<pid_t>& pids);
  virtual ~ShareSampler() = default;
  // Adds each tenant's busy time since the previous sample, per 10 ms bucket.
  virtual void Sample(uint64_t now_ns) = 0;
  // Busy percent of tenant `index` within [from, to), from the samples.
  virtual std::optional<double> Share(size_t index, uint64_t from, uint64_t to) const = 0;
};

}  // namespace vgpu::bench
