// The node daemon's side of a slice's quarantine controls (shm/region.h TenantControl): reads
// what libvgpu.so counted (failed launches, refused allocations, held launches), the slice's
// processes and memory; writes the pause lease, the level and the lowered share. And the host
// pids of a slice's processes (for terminate), and which slice a host pid belongs to (for an
// XID that names its process), found through /proc: a region slot records the process's pid in
// its own pid namespace, that namespace's inode and the start time.
//
// Built on src/shm when that library is part of the build; without it every call reports
// kUnavailable. Thread-compatible (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::node {

struct SliceProcess {
  int32_t pid = 0;  // in its pid namespace
  uint64_t pid_ns = 0;
  uint64_t start_time = 0;
};

// SpillState::mode of a slice in memory mode spill (intercept/config/config.h MemoryMode).
inline constexpr uint32_t kRegionModeSpill = 2;

struct SliceControlView {
  uint64_t pause_until_ns = 0;
  uint32_t level = 0;
  uint32_t share_cap_pct = 0;
  uint64_t launch_failures = 0;
  uint64_t oom_refusals = 0;
  uint64_t held_launches = 0;
  std::vector<uint64_t> used_bytes;   // per device of the slice
  std::vector<uint64_t> limit_bytes;  // per device; 0: no limit
  std::vector<SliceProcess> processes;
  // SpillState (shm/region.h): memory mode (kRegionModeSpill), protected, bytes spilled now.
  uint32_t memory_mode = 0;
  bool protected_slice = false;
  uint64_t spilled_bytes = 0;
};

Result<SliceControlView> ReadSliceControl(const std::string& region_path);

// Writes the fields given (others untouched).
struct SliceControlUpdate {
  std::optional<uint64_t> pause_until_ns;
  std::optional<uint32_t> level;
  std::optional<uint32_t> share_cap_pct;
};
Status WriteSliceControl(const std::string& region_path, const SliceControlUpdate& update);

// Host pids (under `proc_root`) of the given processes; those not found are skipped.
std::vector<uint32_t> HostPidsOf(const std::string& proc_root,
                                 const std::vector<SliceProcess>& processes);
// The identity of host pid `pid` as a region slot records it; nullopt when unreadable.
std::optional<SliceProcess> IdentityOfHostPid(const std::string& proc_root, uint32_t pid);

}  // namespace vgpu::node
