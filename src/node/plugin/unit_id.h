// Unit IDs: the device IDs the node daemon advertises to kubelet. Each GPU is split into a
// configurable number of shareable units; unit k of the GPU with UUID U has the ID "U-k"
// (e.g. "GPU-0a1b2c3d-...-3", the same shape as HAMi's replica IDs). The GPU and the unit index
// can be read back from the ID, so a set of unit IDs names exact places on exact GPUs.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace vgpu::node {

struct UnitRef {
  std::string gpu_uuid;
  int unit = 0;
  friend bool operator==(const UnitRef&, const UnitRef&) = default;
};

// Kubelet limits device IDs to 63 characters.
inline constexpr size_t kMaxDeviceIdLength = 63;
inline constexpr int kMaxUnitsPerGpu = 1000;

std::string MakeUnitId(std::string_view gpu_uuid, int unit);

// Splits "U-k" into U and k. kInvalidArgument when there is no "-<digits>" suffix, the index is
// out of 0..kMaxUnitsPerGpu-1, or the UUID part is empty.
Result<UnitRef> ParseUnitId(std::string_view id);

}  // namespace vgpu::node
