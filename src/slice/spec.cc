#include "slice/spec.h"

#include "common/units.h"
#include "shm/priority.h"

namespace vgpu::slice {
namespace {

Status Bad(const std::string& prefix, const std::string& flag, const std::string& value,
           const std::string& why) {
  return Status::InvalidArgument(prefix + flag + ": \"" + value + "\": " + why);
}

}  // namespace

Result<uint64_t> ParseCopyCap(const std::string& text, const std::string& what) {
  if (text == "unlimited") return uint64_t{0};
  Result<uint64_t> r = ParseRate(text, what);
  if (!r.has_value()) return r.error();
  if (*r < 1'000'000 || *r > 10'000'000'000'000ULL) {
    return Status::InvalidArgument(what + ": \"" + text +
                                   "\": must be between 1MB/s and 10TB/s (or unlimited)");
  }
  return *r;
}

Result<int> ParseCores(const std::string& text, const std::string& what) {
  Parsed<int> p = ParsePercentRaw(text);
  if (p.ok() && p.value >= 1) return p.value;
  const std::string why = p.ok() || p.error == ParseError::kOutOfRange
                              ? "must be 1-100"
                              : std::string(ParseErrorText(p.error)) + ": must be an integer 1-100";
  return Status::InvalidArgument(what + ": \"" + text + "\": " + why +
                                 " (percent of each GPU's time, e.g. 30 or 30%)");
}

Result<SliceSpec> ParseSliceSpec(const SliceFlags& o, const std::string& prefix) {
  SliceSpec s;
  if (!o.memory.empty()) {
    Result<uint64_t> m = ParseByteSize(o.memory, prefix + "--memory");
    if (!m.has_value()) return m.error();
    if (*m == 0) return Bad(prefix, "--memory", o.memory, "must be above 0");
    s.memory = *m;
  }
  if (!o.cores.empty()) {
    Result<int> c = ParseCores(o.cores, prefix + "--cores");
    if (!c.has_value()) return c.error();
    s.cores = *c == 100 ? 0 : *c;
  }
  if (!o.guarantee.empty()) {
    Result<int> g = ParsePercent(o.guarantee, prefix + "--guarantee");
    if (!g.has_value()) return g.error();
    int max = s.cores == 0 ? 100 : s.cores;
    if (*g > max) {
      return Bad(prefix, "--guarantee", o.guarantee,
                 "above the maximum share (--cores " + std::to_string(max) + ")");
    }
    s.guarantee = *g;
    s.elastic = true;
  }
  if (o.elastic) s.elastic = true;
  if (!o.weight.empty()) {
    Result<uint64_t> w = ParseUnsigned(o.weight, prefix + "--weight");
    if (!w.has_value()) return w.error();
    if (*w < 1 || *w > shm::kMaxWeight) {
      return Bad(prefix, "--weight", o.weight, "must be 1-" + std::to_string(shm::kMaxWeight));
    }
    s.weight = static_cast<int>(*w);
  }
  if (!o.priority.empty()) {
    int32_t level = -1;
    if (!shm::ParsePriority(o.priority, &level)) {
      return Bad(prefix, "--priority", o.priority, std::string("use ") + shm::kPriorityChoices);
    }
    s.priority = level;
    s.priority_given = true;
  }
  if (!o.time_slice.empty()) {
    Result<int64_t> t = ParseDuration(o.time_slice, prefix + "--time-slice");
    if (!t.has_value()) return t.error();
    if (static_cast<uint64_t>(*t) < shm::kMinTimeSliceNs ||
        static_cast<uint64_t>(*t) > shm::kMaxTimeSliceNs) {
      return Bad(prefix, "--time-slice", o.time_slice, "must be between 500us and 1s");
    }
    s.time_slice_ns = static_cast<uint64_t>(*t);
  }
  if (!o.latency_slack.empty()) {
    Result<int64_t> t = ParseDuration(o.latency_slack, prefix + "--latency-slack");
    if (!t.has_value()) return t.error();
    if (*t < 0 || static_cast<uint64_t>(*t) > shm::kMaxLatencySlackUs * 1000ULL) {
      return Bad(prefix, "--latency-slack", o.latency_slack, "must be between 0 and 1s");
    }
    s.latency_slack_ns = *t;
  }
  if (!o.copy_bandwidth.empty()) {
    // H2D[,D2H]; one value caps both directions.
    size_t comma = o.copy_bandwidth.find(',');
    std::string h2d = o.copy_bandwidth.substr(0, comma);
    std::string d2h = comma == std::string::npos ? h2d : o.copy_bandwidth.substr(comma + 1);
    if (d2h.find(',') != std::string::npos) {
      return Bad(prefix, "--copy-bandwidth", o.copy_bandwidth, "use H2D[,D2H], e.g. 10GB/s,5GB/s");
    }
    Result<uint64_t> h = ParseCopyCap(h2d, prefix + "--copy-bandwidth");
    if (!h.has_value()) return h.error();
    Result<uint64_t> d = ParseCopyCap(d2h, prefix + "--copy-bandwidth");
    if (!d.has_value()) return d.error();
    s.copy_h2d = *h;
    s.copy_d2h = *d;
  }
  s.copy_borrow = o.copy_borrow;
  if (!o.memory_mode.empty()) {
    if (!ParseMemoryMode(o.memory_mode, &s.memory_mode)) {
      return Bad(prefix, "--memory-mode", o.memory_mode, "use strict, overcommit or spill");
    }
    if (s.memory_mode == MemoryMode::kSpill && s.memory == shm::kNoLimit) {
      return Status::InvalidArgument(prefix +
                                     "--memory-mode: spill needs a memory limit (--memory)");
    }
  }
  if (!o.devices.empty()) {
    size_t start = 0;
    while (start <= o.devices.size()) {
      size_t comma = o.devices.find(',', start);
      std::string d =
          o.devices.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      bool index = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
      bool uuid = d.rfind("GPU-", 0) == 0 || d.rfind("MIG-", 0) == 0;
      if (!index && !uuid) {
        return Bad(prefix, "--device", d, "use device indices or GPU- UUIDs, e.g. 0,1");
      }
      s.devices.push_back(d);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (s.devices.size() > static_cast<size_t>(shm::kMaxDevices)) {
      return Status::InvalidArgument(prefix + "--device: at most " +
                                     std::to_string(shm::kMaxDevices) + " devices");
    }
  }
  return s;
}

}  // namespace vgpu::slice
