#include "slice/compute_settings.h"

#include "common/limits_format.h"
#include "common/units.h"
#include "shm/arbiter.h"
#include "slice/spec.h"

namespace vgpu::slice {
namespace {

using units_internal::EqualsIgnoreCase;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

Status Bad(const std::string& where, std::string_view key, std::string_view value,
           const std::string& why) {
  return Status::InvalidArgument(where + ": " + std::string(key) + ": \"" + std::string(value) +
                                 "\" " + why);
}

}  // namespace

void ComputeSettings::OverrideWith(const ComputeSettings& other) {
  if (other.guarantee >= 0) guarantee = other.guarantee;
  if (other.weight > 0) weight = other.weight;
  if (!other.mode.empty()) mode = other.mode;
  if (other.level >= 0) level = other.level;
  if (other.time_slice_ns > 0) time_slice_ns = other.time_slice_ns;
  if (!other.memory_mode.empty()) memory_mode = other.memory_mode;
  if (other.copy_h2d.has_value()) copy_h2d = other.copy_h2d;
  if (other.copy_d2h.has_value()) copy_d2h = other.copy_d2h;
  if (other.copy_borrow.has_value()) copy_borrow = other.copy_borrow;
}

Result<ComputeSettings> ParseComputeSettings(std::string_view text, const std::string& where) {
  ComputeSettings out;
  while (!text.empty()) {
    size_t end = text.find_first_of(",;");
    std::string_view item = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument(where + ": expected key=value, got \"" + std::string(item) +
                                     "\"");
    }
    std::string_view key = Trim(item.substr(0, eq));
    std::string_view value = Trim(item.substr(eq + 1));
    if (key == "guarantee") {
      Parsed<int> p = ParsePercentRaw(value);
      if (!p.ok()) return Bad(where, key, value, "is not a percentage 0..100");
      out.guarantee = p.value;
    } else if (key == "weight") {
      Parsed<uint64_t> p = ParseUnsignedRaw(value);
      if (!p.ok() || p.value < 1 || p.value > shm::kMaxWeight) {
        return Bad(where, key, value, "is not a weight 1.." + std::to_string(shm::kMaxWeight));
      }
      out.weight = static_cast<int>(p.value);
    } else if (key == "mode") {
      if (EqualsIgnoreCase(value, "capped")) {
        out.mode = "capped";
      } else if (EqualsIgnoreCase(value, "elastic")) {
        out.mode = "elastic";
      } else {
        return Bad(where, key, value, "is not a mode (capped or elastic)");
      }
    } else if (key == "priority") {
      int32_t level = -1;
      if (!shm::ParsePriority(value, &level)) {
        return Bad(where, key, value,
                   "is not a priority (realtime, high, normal, low, idle; or 0 high, 1 normal)");
      }
      out.level = level;
    } else if (key == "time-slice" || key == "time_slice") {
      Parsed<int64_t> p = ParseDurationRaw(value);
      if (!p.ok() || static_cast<uint64_t>(p.value) < shm::kMinTimeSliceNs ||
          static_cast<uint64_t>(p.value) > shm::kMaxTimeSliceNs) {
        return Bad(where, key, value, "is not a time slice between 500us and 1s (e.g. 5ms)");
      }
      out.time_slice_ns = static_cast<uint64_t>(p.value);
    } else if (key == "memory-mode" || key == "memory_mode") {
      MemoryMode mode;
      if (!ParseMemoryMode(value, &mode)) {
        return Bad(where, key, value, "is not a memory mode (strict, overcommit or spill)");
      }
      out.memory_mode = std::string(value);
    } else if (key == "copy-h2d" || key == "copy_h2d" || key == "copy-d2h" || key == "copy_d2h") {
      Result<uint64_t> cap = ParseCopyCap(std::string(value), where + ": " + std::string(key));
      if (!cap.has_value()) return cap.error();
      (key.substr(5) == "h2d" ? out.copy_h2d : out.copy_d2h) = *cap;
    } else if (key == "copy-borrow" || key == "copy_borrow") {
      if (EqualsIgnoreCase(value, "on")) {
        out.copy_borrow = true;
      } else if (EqualsIgnoreCase(value, "off")) {
        out.copy_borrow = false;
      } else {
        return Bad(where, key, value, "is not on or off");
      }
    } else {
      return Status::InvalidArgument(where + ": unknown key \"" + std::string(key) +
                                     "\" (known: guarantee, weight, mode, priority, time-slice, "
                                     "memory-mode, copy-h2d, copy-d2h, copy-borrow)");
    }
  }
  return out;
}

Result<ComputeSettings> ComputeSettingsOf(const std::map<std::string, std::string>& annotations,
                                          const std::string& container) {
  ComputeSettings out;
  for (const std::string& name :
       {std::string(kComputeAnnotation), std::string(kComputeAnnotation) + "." + container}) {
    auto it = annotations.find(name);
    if (it == annotations.end()) continue;
    auto parsed = ParseComputeSettings(it->second, name);
    if (!parsed) return parsed.error();
    out.OverrideWith(*parsed);
  }
  return out;
}

std::string FormatTimeSlice(uint64_t ns) {
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

}  // namespace vgpu::slice
