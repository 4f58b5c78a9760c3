// A slice's limits as a command line gives them (`vgpu run`, `vgpu bench share`'s tenants):
// the flags' text (SliceFlags) and what they mean once checked (SliceSpec). Errors name the flag
// and the value. The node's containers get theirs from the pod (slice/compute_settings.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/limits_format.h"
#include "common/result.h"
#include "shm/arbiter.h"
#include "shm/region.h"

namespace vgpu::slice {

// A slice's settings as given on a command line (text, validated by ParseSliceSpec).
struct SliceFlags {
  std::string memory;
  std::string cores;      // max share
  std::string guarantee;  // guaranteed share (makes the slice elastic unless --capped)
  std::string weight;
  std::string priority;       // realtime, high, normal, low, idle (or 0 / 1)
  std::string time_slice;     // e.g. 5ms
  std::string latency_slack;  // e.g. 1ms (docs/compute.md, "Priorities that conserve work")
  bool elastic = false;
  std::string devices;
  std::string copy_bandwidth;  // H2D[,D2H] caps (docs/copy-qos.md)
  bool copy_borrow = false;    // copies may use idle host-link bandwidth beyond the caps
  std::string memory_mode;     // strict, overcommit or spill (docs/oversubscription.md)
};

struct SliceSpec {
  uint64_t memory = shm::kNoLimit;
  int cores = 0;       // max share; 0: none
  int guarantee = -1;  // -1: not given
  int weight = 0;      // 0: not given
  int priority = shm::kPriorityNormal;
  bool priority_given = false;
  bool elastic = false;
  bool mode_given = false;        // write the mode even when capped (takes part in arbitration)
  uint64_t time_slice_ns = 0;     // 0: not given
  int64_t latency_slack_ns = -1;  // -1: not given
  std::vector<std::string> devices;
  uint64_t copy_h2d = 0;  // bytes/s; 0: no cap
  uint64_t copy_d2h = 0;
  bool copy_borrow = false;
  MemoryMode memory_mode = MemoryMode::kStrict;
  std::string arbiter_dir;  // "" : <state>/arbiter (a nested slice uses its outer slice's)
};

// Parses a copy cap: a rate between 1MB/s and 10TB/s, or "unlimited" (0). `what` names it.
Result<uint64_t> ParseCopyCap(const std::string& text, const std::string& what);

// A compute share (--cores, and a bench tenant's max=): an integer percent 1-100, "30" or "30%".
// Every command words its range the same way, in --help (kCoresRange) and in the error:
// `--cores: "0": must be 1-100 (percent of each GPU's time, e.g. 30 or 30%)`.
inline constexpr const char* kCoresRange = "percent of each GPU's time, 1-100 (30 or 30%)";
Result<int> ParseCores(const std::string& text, const std::string& what);

// Validates the flags; errors name the flag and the value (`--cores: "120": ...`). `prefix` is
// prepended to flag names in messages (the bench's "tenant a: ").
Result<SliceSpec> ParseSliceSpec(const SliceFlags& flags, const std::string& prefix = "");

}  // namespace vgpu::slice
