// Thrash control of spilling slices (docs/oversubscription.md, "Risk control"): turns a GPU's
// sustained host-link traffic into `thrash` signals (node/faults/tenant_levels.h) for the slices
// that spill on that GPU, so that the tenant levels throttle them (limit: a lower compute share)
// and then pause them, and never a high-priority slice (which never spills).
//
// A slice spills when its region says memory mode spill, not protected, and bytes spilled now
// (shm/region.h SpillState). A GPU thrashes when the bytes per second its host link receives
// (NVML PCIe RX throughput; the simulated GPU counts its copies and managed-memory migrations)
// reach `link_bytes_per_s` while some slice spills on it, for `rounds` consecutive rounds; from
// then on each round gives each spilling slice on it one signal, until the traffic falls below
// the threshold. The traffic is the GPU's, not the slice's: what the driver does not attribute
// cannot be told apart (another slice's copies count too), which is why only spilling slices
// are ever signalled.
//
// Pure: the daemon passes what it read. Not thread-safe (the daemon's tenant round).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::node {

struct ThrashRules {
  double link_bytes_per_s = 2e9;  // host-link receive rate that counts as thrash (1MB/s..1TB/s)
  int rounds = 3;                 // consecutive rounds before a signal (1..1000)
};

// Parses "link=2GB/s,rounds=3" (fields not given keep their defaults); errors name the field.
Result<ThrashRules> ParseThrashRules(const std::string& text);

struct SpillSliceState {
  std::string slice;
  bool spilling = false;  // mode spill, not protected, spilled_bytes > 0
  uint64_t spilled_bytes = 0;
  std::vector<std::string> gpus;  // UUIDs of its GPUs
};

struct ThrashSignal {
  std::string slice;
  std::string what;  // "GPU-... host link receives 12.3 GB/s while the slice spills 1.50 GiB"
};

class SpillThrash {
 public:
  explicit SpillThrash(ThrashRules rules) : rules_(rules) {}

  // One round: the receive rate of each GPU by UUID (missing: unknown, no thrash) and the
  // slices. Returns the signals to send.
  std::vector<ThrashSignal> Round(const std::map<std::string, double>& rx_by_gpu,
                                  const std::vector<SpillSliceState>& slices);

 private:
  ThrashRules rules_;
  std::map<std::string, int> busy_rounds_;  // by GPU UUID
};

}  // namespace vgpu::node
