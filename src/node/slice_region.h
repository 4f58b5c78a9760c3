// The accounting region of a slice, as the node daemon sees it: created at Allocate with the
// slice's limits (so the limits in the region come from the daemon, not from whichever process
// of the container starts first), and read for metrics.
//
// Built on src/shm (the region layout libvgpu.so uses) when that library is part of the build;
// without it, CreateSliceRegion does nothing (libvgpu.so creates the region itself on first use)
// and ReadSliceRegion reports kUnavailable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "node/slice.h"

namespace vgpu::node {

Status CreateSliceRegion(const std::string& path, const SliceSpec& spec);

struct RegionUsage {
  std::vector<uint64_t> used_bytes;  // charged per CUDA index in the container
  int processes = 0;                 // live process slots
};

// Reads the region at `path` read-only. kNotFound when it does not exist yet.
Result<RegionUsage> ReadSliceRegion(const std::string& path, int device_count);

}  // namespace vgpu::node
