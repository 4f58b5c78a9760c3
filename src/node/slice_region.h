// The accounting region of a slice, as the node daemon sees it: created at Allocate with the
// slice's limits (so the limits in the region come from the daemon, not from whichever process
// of the container starts first), and read for metrics.
//
// Built on src/shm (the region layout libvgpu.so uses) when that library is part of the build;
// without it, CreateSliceRegion does nothing (libvgpu.so creates the region itself on first use)
// and ReadSliceRegion reports kUnavailable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "node/slice.h"

namespace vgpu::node {

Status CreateSliceRegion(const std::string& path, const ContainerSlice& spec);

// The slice's exact counters from its region (shm/region.h ProcCounters and TenantControl),
// summed over its processes, living and gone. docs/telemetry.md says what each one means.
struct SliceCounterValues {
  bool counting = false;  // a libvgpu.so that counts joined the slice (region minor >= 4)
  uint64_t launches = 0;
  uint64_t graph_launches = 0;
  uint64_t copy_bytes[4] = {};  // host-to-device, device-to-host, device-to-device, peer
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t gate_wait_ns = 0;
  uint64_t pause_wait_ns = 0;
  uint64_t busy_ns = 0;
  uint64_t oom_refusals = 0;
  uint64_t launch_failures = 0;
  uint64_t held_launches = 0;
  std::vector<uint64_t> peak_bytes;  // highest charge per CUDA index
  // CLOCK_MONOTONIC time of the slice's last gated kernel launch (region minor 5); 0: none.
  uint64_t last_kernel_ns = 0;
};

struct RegionUsage {
  std::vector<uint64_t> used_bytes;  // charged per CUDA index in the container
  int processes = 0;                 // live process slots
  bool counters_read = false;        // false: the counters moved too fast to read this time
  SliceCounterValues counters;
};

// Reads the region at `path` read-only. kNotFound when it does not exist yet.
Result<RegionUsage> ReadSliceRegion(const std::string& path, int device_count);

// The slices' regions kept mapped (read-only) between scrapes, so that a scrape of many slices
// costs no open, mmap or page fault: a region is opened again only when its file was replaced
// (another inode) or could not be read. Thread-safe.
class RegionCache {
 public:
  RegionCache();
  ~RegionCache();
  RegionCache(const RegionCache&) = delete;
  RegionCache& operator=(const RegionCache&) = delete;

  // As ReadSliceRegion.
  Result<RegionUsage> Read(const std::string& path, int device_count);
  // Unmaps the regions whose paths are not in `keep` (slices that are gone).
  void Retain(const std::vector<std::string>& keep);
  size_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vgpu::node
