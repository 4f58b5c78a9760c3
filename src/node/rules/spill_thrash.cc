#include "node/rules/spill_thrash.h"

#include <cstdio>

#include "common/field_list.h"
#include "common/units.h"

namespace vgpu::node {

Result<ThrashRules> ParseThrashRules(const std::string& text) {
  ThrashRules r;
  for (const FieldItem& item : SplitFieldList(text)) {
    const std::string& field = item.field;
    const std::string& value = item.value;
    if (field == "link") {
      Parsed<uint64_t> v = ParseRateRaw(value);
      if (!v.ok() || v.value < 1'000'000 || v.value > 1'000'000'000'000ULL) {
        return Status::InvalidArgument("link: \"" + value +
                                       "\": a rate between 1MB/s and 1TB/s expected (e.g. 2GB/s)");
      }
      r.link_bytes_per_s = static_cast<double>(v.value);
    } else if (field == "rounds") {
      Parsed<uint64_t> v = ParseUnsignedRaw(value);
      if (!v.ok() || v.value < 1 || v.value > 1000) {
        return Status::InvalidArgument("rounds: \"" + value + "\": 1..1000 expected");
      }
      r.rounds = static_cast<int>(v.value);
    } else {
      return Status::InvalidArgument("\"" + field + "\" is not a field (link, rounds)");
    }
  }
  return r;
}

std::vector<ThrashSignal> SpillThrash::Round(const std::map<std::string, double>& rx_by_gpu,
                                             const std::vector<SpillSliceState>& slices) {
  std::map<std::string, std::vector<const SpillSliceState*>> spilling;  // by GPU
  for (const SpillSliceState& s : slices) {
    if (!s.spilling) continue;
    for (const std::string& g : s.gpus) spilling[g].push_back(&s);
  }
  std::vector<ThrashSignal> out;
  std::map<std::string, int> next;
  for (const auto& [gpu, list] : spilling) {
    auto rx = rx_by_gpu.find(gpu);
    if (rx == rx_by_gpu.end() || rx->second < rules_.link_bytes_per_s) continue;
    int rounds = busy_rounds_[gpu] + 1;
    next[gpu] = rounds;
    if (rounds < rules_.rounds) continue;
    for (const SpillSliceState* s : list) {
      char what[256];
      std::snprintf(what, sizeof(what), "%s host link receives %.2f GB/s while the slice spills %s",
                    gpu.c_str(), rx->second / 1e9, FormatBytes(s->spilled_bytes).c_str());
      out.push_back({s->slice, what});
    }
  }
  busy_rounds_ = std::move(next);  // a GPU without thrash this round starts again from 0
  return out;
}

}  // namespace vgpu::node
