// `vgpu run` inside a slice: the new slice is a child of the outer one and never gives its
// command more than the outer slice allows.
//
// Inside a slice means: VGPU_LIMITS_FILE or CUDA_DEVICE_MEMORY_SHARED_CACHE is set, libvgpu is in
// LD_PRELOAD, or /etc/vgpu/limits exists (a Kubernetes container). The outer slice is then what
// libvgpu.so would make of this environment (intercept/config/config.h): its limits and its region.
//
// The child slice (docs/intercept.md, "Nested slices"):
//   - memory: its limit is at most the outer limit (a larger --memory is lowered, with a note),
//     and its region names the outer region as its parent, so every charge of its processes is
//     made in both regions (intercept/memory/accountant.h): the outer slice's processes and the
//     inner ones together stay within the outer limit;
//   - compute: when the outer slice has compute settings, the child takes them and its processes
//     arbitrate as members of the outer slice (its share is the outer's share, shared with the
//     outer's processes); compute flags for the child are then refused. Without outer compute
//     settings the child's own compute flags apply as for any slice;
//   - copy bandwidth: each cap is at most the outer one (a larger --copy-bandwidth is lowered),
//     borrowing only when both allow it, and the child's processes draw from the outermost
//     slice's buckets (docs/copy-qos.md), so inner and outer copies together keep the outer cap.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "slice/slice_dir.h"

namespace vgpu::cli {

struct OuterSlice {
  std::string region_path;  // the outer slice's accounting region: the parent of the new one
  std::string name;         // for messages: the directory of that region
  uint64_t memory = shm::kNoLimit;  // the smallest per-device limit of an outer process
  bool compute = false;             // the outer slice has compute settings
  slice::SliceSpec compute_spec;    // those settings, as slice flags would give them
  std::string arbiter_dir;          // the arbiters the outer slice's processes join
  uint64_t copy_h2d = 0;            // copy caps of an outer process, bytes/s; 0: none
  uint64_t copy_d2h = 0;
  bool copy_borrow = false;
};

// The slice this process runs in, if any. An error (bad input, exit 2) when the environment says
// this is a slice but its limits cannot be read, or the outer slice is nested too deep; an I/O
// error when its region cannot be opened. std::nullopt outside a slice, or in a "slice" that
// limits nothing.
Result<std::optional<OuterSlice>> FindOuterSlice();

// `spec` bounded by `outer` (see above). `flags` tells which compute flags were given.
// `note` receives a line for stderr when the memory asked for was lowered.
Result<slice::SliceSpec> BoundByOuter(const OuterSlice& outer, slice::SliceSpec spec,
                                      const slice::SliceFlags& flags, std::string* note);

// Links the new slice's region to the outer one (after SliceDir::Create, before the command
// starts).
Status LinkToOuter(const std::string& region_path, const OuterSlice& outer);

}  // namespace vgpu::cli
