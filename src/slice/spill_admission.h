// Admission of a slice in memory mode `spill` (memory beyond the GPU's free memory comes from
// managed memory whose pages may live on the host): the risk control of
// docs/oversubscription.md, used by `vgpu run` (cli/run/run_spill.h) and the node daemon
// (node/plugin/allocator.h). Pure: the caller reads the host's memory and the GPUs' promises.
//
// A spill slice is admitted only when
//   1. the host can hold what may spill: spill + already_spilled <= host_available - headroom
//      (pinned and managed host pages are not swappable, so MemAvailable is the budget), and
//   2. the GPU's memory promised to all its slices, this one included, stays within
//      max_ratio x physical (a ratio cap per GPU).
// The reason names the numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vgpu::slice {

struct SpillAsk {
  uint64_t spill_bytes = 0;      // what this slice may place on the host
  uint64_t promised_on_gpu = 0;  // memory limits of the GPU's slices, this one included
};

struct SpillBudget {
  uint64_t host_available = 0;   // /proc/meminfo MemAvailable (or the cgroup's limit, smaller)
  uint64_t headroom = 0;         // kept free for the host
  uint64_t already_spilled = 0;  // spill of the slices admitted before
  uint64_t gpu_physical = 0;     // the GPU's memory
  double max_ratio = 1.5;        // promised / physical at most
};

struct SpillDecision {
  bool admitted = false;
  std::string reason;  // why not (empty when admitted)
};

SpillDecision AdmitSpill(const SpillAsk& ask, const SpillBudget& budget);

// One GPU of a slice that asks to spill.
struct SpillGpu {
  std::string name;                 // for the reason ("GPU 0", a UUID)
  uint64_t physical = 0;            // its memory
  uint64_t promised_by_others = 0;  // the memory limits of the other live slices on it
  uint64_t limit = 0;               // the asking slice's memory limit on it
};

struct SpillPolicy {
  uint64_t headroom = 4ULL << 30;
  double max_ratio = 1.5;
};

// A slice on `gpus`, beside slices that spill `already_spilled` now, with `host_available`
// bytes of host memory. Per GPU: promised = promised_by_others + limit,
// spill = min(limit, promised - physical) (at least 0: the part of the promise the GPU cannot
// hold, which lands on the spilling slices), then AdmitSpill (the slice's GPUs spill on the same
// host: each GPU's spill adds to what the next must fit beside). Refused: the reason names the
// GPU ("GPU 0: host memory cannot cover the spill: ..."); no GPUs: refused.
SpillDecision AdmitSpillOnGpus(const std::vector<SpillGpu>& gpus, uint64_t already_spilled,
                               uint64_t host_available, const SpillPolicy& policy);

}  // namespace vgpu::slice
