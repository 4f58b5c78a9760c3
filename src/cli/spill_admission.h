// Admission of a slice in memory mode `spill` (memory beyond the GPU's free memory comes from
// managed memory whose pages may live on the host): the risk control of docs/copy-qos.md's
// companion, "Memory oversubscription". Pure: the caller reads the host's memory.
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

namespace vgpu::cli {

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

// MemAvailable of /proc/meminfo in bytes, or 0 when it cannot be read.
uint64_t ReadMemAvailable(const char* meminfo_path = "/proc/meminfo");

}  // namespace vgpu::cli
