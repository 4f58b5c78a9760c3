#include "k8s/extender_scores.h"

#include <algorithm>
#include <limits>


namespace vgpu::k8s {

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
