#include "node/plugin/unit_id.h"

namespace vgpu::node {

std::string MakeUnitId(std::string_view gpu_uuid, int unit) {
  std::string id(gpu_uuid);
  id += '-';
  id += std::to_string(unit);
  return id;
}

Result<UnitRef> ParseUnitId(std::string_view id) {
  size_t dash = id.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size()) {
    return Status::InvalidArgument("device ID \"" + std::string(id) +
                                   "\" is not a vgpu unit ID (<gpu uuid>-<unit>)");
  }
  std::string_view digits = id.substr(dash + 1);
  if (digits.size() > 4) {
    return Status::InvalidArgument("device ID \"" + std::string(id) + "\": unit index too long");
  }
  int unit = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') {
      return Status::InvalidArgument("device ID \"" + std::string(id) +
                                     "\" is not a vgpu unit ID (<gpu uuid>-<unit>)");
    }
    unit = unit * 10 + (c - '0');
  }
  if (unit >= kMaxUnitsPerGpu) {
    return Status::InvalidArgument("device ID \"" + std::string(id) + "\": unit index " +
                                   std::to_string(unit) + " out of range");
  }
  return UnitRef{std::string(id.substr(0, dash)), unit};
}

}  // namespace vgpu::node
