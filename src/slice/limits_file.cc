#include "slice/limits_file.h"

#include <string_view>

#include "common/printable.h"
#include "shm/priority.h"
#include "slice/compute_settings.h"

namespace vgpu::slice {
namespace {

void Key(std::string& out, std::string_view key, std::string_view value) {
  out.append(key).append("=").append(value).append("\n");
}

void Key(std::string& out, std::string_view key, uint64_t value) {
  Key(out, key, std::to_string(value));
}

}  // namespace

std::string LimitsFileText(const LimitsFile& l) {
  std::string out = std::string(kLimitsFileHeader) + "\n";
  for (const std::string& comment : l.comments) {
    char line[512];
    EscapeForDisplay(comment, line, sizeof(line), 400);
    out.append("# ").append(line).append("\n");
  }
  for (size_t i = 0; i < l.devices.size(); ++i) {
    const std::string n = std::to_string(i);
    Key(out, "uuid." + n, l.devices[i].uuid);
    Key(out, "memory." + n, l.devices[i].memory);
    Key(out, "cores." + n, static_cast<uint64_t>(l.devices[i].cores));
  }
  if (l.memory != shm::kNoLimit) Key(out, "memory", l.memory);
  if (l.cores != 0) Key(out, "cores", static_cast<uint64_t>(l.cores));
  if (l.guarantee >= 0) Key(out, "guarantee", static_cast<uint64_t>(l.guarantee));
  if (l.weight > 0) Key(out, "weight", static_cast<uint64_t>(l.weight));
  if (!l.mode.empty()) Key(out, "mode", l.mode);
  if (l.priority.has_value()) Key(out, "priority", shm::PriorityName(*l.priority));
  if (l.time_slice_ns > 0) Key(out, "time_slice", FormatTimeSlice(l.time_slice_ns));
  if (l.latency_slack_ns >= 0) Key(out, "latency_slack", std::to_string(l.latency_slack_ns) + "ns");
  if (l.copy_h2d != 0) Key(out, "copy_h2d", l.copy_h2d);
  if (l.copy_d2h != 0) Key(out, "copy_d2h", l.copy_d2h);
  if (l.copy_borrow) Key(out, "copy_borrow", "on");
  if (!l.arbiter_dir.empty()) Key(out, "arbiter_dir", l.arbiter_dir);
  if (l.context_overhead >= 0) {
    Key(out, "context_overhead", static_cast<uint64_t>(l.context_overhead));
  }
  Key(out, "region", l.region);
  Key(out, "memory_mode", MemoryModeName(l.memory_mode));
  out.append(kLimitsFileEnd).append("\n");
  return out;
}

}  // namespace vgpu::slice
