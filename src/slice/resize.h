// Resizing a slice live from a tool (`vgpu resize`, the node daemon): opens the slice's region
// file, applies a shm::ResizeRequest (region_resize.h) under the region mutex, and says what
// changed, or why nothing did, in words. Not part of libvgpu.so (strings, Status).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/status.h"
#include "shm/region_resize.h"

namespace vgpu::slice {

// One change for every configured device of the slice (or one device).
struct SliceResize {
  std::optional<uint64_t> memory;  // bytes; shm::kNoLimit = unlimited
  std::optional<int> cores;        // 1..100
  std::optional<int> priority;     // PriorityLevel 0 realtime .. 4 idle (shm/arbiter.h)
  int device = -1;                 // -1: every configured device
};

struct SliceResizeResult {
  std::string summary;  // "memory 8 GiB -> 4 GiB, cores 30% -> 60% (device 0)"
  uint64_t seq = 0;     // the region's resize seq after the change
};

// Applies `change` to the region at `region_path`.
//   kInvalidArgument  nothing to change, a device outside the slice, cores outside 1..100
//   kFailedPrecondition  a memory limit below what the slice has in use: the message names the
//                     device, the usage and the asked limit; nothing is changed
//   kNotFound / kIoError / kDataLoss-like kInternal  the region cannot be opened or is corrupt
Result<SliceResizeResult> ResizeSlice(const std::string& region_path, const SliceResize& change);

}  // namespace vgpu::slice
