#include "k8s/extender/extender_scores.h"

#include <algorithm>
#include <limits>

namespace vgpu::k8s {

std::vector<uint32_t> NodeTieOrder(const std::vector<std::string>& names, uint64_t seed) {
  std::vector<std::pair<uint64_t, uint32_t>> keyed;
  keyed.reserve(names.size());
  for (uint32_t id = 0; id < names.size(); ++id) {
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : names[id]) h = (h ^ c) * 1099511628211ULL;
    h ^= seed + 0x9e3779b97f4a7c15ULL;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
    keyed.emplace_back(h, id);
  }
  std::sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : names[a.second] < names[b.second];
  });
  std::vector<uint32_t> order;
  order.reserve(keyed.size());
  for (const auto& [h, id] : keyed) order.push_back(id);
  return order;
}

size_t EngineChoice(std::span<const int64_t> raw, std::span<const uint8_t> feasible,
                    std::span<const uint32_t> tie_rank) {
  size_t best = kNoChoice;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (feasible[i] == 0) continue;
    if (best == kNoChoice || raw[i] > raw[best] ||
        (raw[i] == raw[best] && tie_rank[i] < tie_rank[best])) {
      best = i;
    }
  }
  return best;
}

std::vector<int64_t> ExtenderPriorities(std::span<const int64_t> raw,
                                        std::span<const uint8_t> feasible, size_t choice) {
  std::vector<int64_t> out(raw.size(), 0);
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < raw.size(); ++i) {
    if (feasible[i] == 0) continue;
    lo = std::min(lo, raw[i]);
    hi = std::max(hi, raw[i]);
  }
  constexpr int64_t kBelowTop = kMaxExtenderPriority - 1;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (feasible[i] == 0) continue;
    if (i == choice) {
      out[i] = kMaxExtenderPriority;
    } else if (hi == lo) {
      out[i] = kBelowTop;
    } else {
      const __int128 num = static_cast<__int128>(raw[i]) - lo;
      const __int128 den = static_cast<__int128>(hi) - lo;
      out[i] = static_cast<int64_t>(num * kBelowTop / den);
    }
  }
  return out;
}

}  // namespace vgpu::k8s
