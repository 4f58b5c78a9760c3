#include "topo/besteffort.h"

#include <algorithm>

namespace vgpu::topo {
namespace {

int PcieScore(PcieLevel level) {
  switch (level) {
    case PcieLevel::kSystem:
      return 10;
    case PcieLevel::kNode:
      return 20;
    case PcieLevel::kHostBridge:
      return 30;
    case PcieLevel::kMultiple:
      return 40;
    case PcieLevel::kSingle:
      return 50;
    case PcieLevel::kInternal:
      return 60;
  }
  return 0;
}

bool Contains(const std::vector<int>& set, int gpu) {
  return std::find(set.begin(), set.end(), gpu) != set.end();
}

bool ContainsAll(const std::vector<int>& set, const std::vector<int>& subset) {
  for (int g : subset) {
    if (!Contains(set, g)) return false;
  }
  return true;
}

int Padding(const std::vector<int>& set) {
  return static_cast<int>(std::count(set.begin(), set.end(), -1));
}

template <typename PairScore>
int SetScore(const Topology& t, const std::vector<int>& set, PairScore pair) {
  int score = 0;
  for (size_t i = 0; i < set.size(); ++i) {
    for (size_t j = i + 1; j < set.size(); ++j) {
      if (set[i] < 0 || set[j] < 0 || set[i] == set[j]) continue;
      score += pair(t.Link(set[i], set[j]));
    }
  }
  return score;
}

}  // namespace

int BestEffortPairScore(const PairLink& link) {
  int nvlinks = link.via_nvswitch ? 0 : std::min(link.nvlinks, 18);
  return PcieScore(link.pcie) + 100 * nvlinks;
}

int HamiPairScore(const PairLink& link) {
  return PcieScore(link.pcie) + 100 * std::min(link.nvlinks, 18);
}

void IterateSets(const std::vector<int>& devices, int size,
                 const std::function<void(const std::vector<int>&)>& callback) {
  int n = static_cast<int>(devices.size());
  if (size <= 0 || size > n) return;
  std::vector<int> idx(size);
  std::vector<int> set(size);
  for (int i = 0; i < size; ++i) idx[i] = i;
  while (true) {
    for (int i = 0; i < size; ++i) set[i] = devices[idx[i]];
    callback(set);
    int level = size - 1;
    while (level >= 0 && idx[level] == n - size + level) --level;
    if (level < 0) return;
    ++idx[level];
    for (int i = level + 1; i < size; ++i) idx[i] = idx[i - 1] + 1;
  }
}

void IteratePartitions(const std::vector<int>& input, int size,
                       const std::function<void(const std::vector<std::vector<int>>&)>& callback) {
  if (size <= 0 || size > static_cast<int>(input.size())) return;
  if (size == 1) {
    for (int d : input) callback({{d}});
    return;
  }
  std::vector<int> devices = input;
  while (devices.size() % size != 0) devices.push_back(-1);
  int padding = Padding(devices);
  std::vector<std::vector<int>> accum;
  std::function<void(const std::vector<int>&)> iterate = [&](const std::vector<int>& devs) {
    if (static_cast<int>(devs.size()) == size) {
      accum.push_back(devs);
      callback(accum);
      accum.pop_back();
      return;
    }
    std::vector<int> rest(devs.begin() + 1, devs.end());
    IterateSets(rest, size - 1, [&](const std::vector<int>& tail) {
      std::vector<int> set;
      set.reserve(size);
      set.push_back(devs[0]);
      set.insert(set.end(), tail.begin(), tail.end());
      int p = Padding(set);
      if (!(p == 0 || p == padding)) return;
      std::vector<int> remaining;
      for (int g : devs) {
        if (!Contains(set, g)) remaining.push_back(g);
      }
      accum.push_back(set);
      iterate(remaining);
      accum.pop_back();
    });
  };
  iterate(devices);
}

std::vector<int> BestEffortAllocate(const Topology& t, const std::vector<int>& available,
                                    const std::vector<int>& required, int size) {
  if (size <= 0 || static_cast<int>(available.size()) < size ||
      static_cast<int>(required.size()) > size) {
    return {};
  }
  std::vector<std::vector<int>> best_partition;
  bool have = false;
  int best_score = 0;
  IteratePartitions(available, size, [&](const std::vector<std::vector<int>>& candidate) {
    bool ok = false;
    for (const auto& set : candidate) ok = ok || (ContainsAll(set, required) && Padding(set) == 0);
    if (!ok) return;
    int score = 0;
    for (const auto& set : candidate) score += SetScore(t, set, BestEffortPairScore);
    if (score > best_score || !have) {
      best_partition = candidate;
      best_score = score;
      have = true;
    }
  });
  std::vector<std::vector<int>> filtered;
  for (const auto& set : best_partition) {
    if (ContainsAll(set, required)) filtered.push_back(set);
  }
  if (filtered.empty()) return {};
  size_t best = 0;
  int score = SetScore(t, filtered[0], BestEffortPairScore);
  for (size_t i = 1; i < filtered.size(); ++i) {
    int s = SetScore(t, filtered[i], BestEffortPairScore);
    if (s > score) {
      best = i;
      score = s;
    }
  }
  return filtered[best];
}

std::vector<int> HamiAllocate(const Topology& t, const std::vector<int>& available, int size) {
  if (size <= 0 || static_cast<int>(available.size()) < size) return {};
  if (size == 1) {
    int best = -1;
    int best_sum = 0;
    for (int g : available) {
      int sum = 0;
      for (int h : available) {
        if (h != g) sum += HamiPairScore(t.Link(g, h));
      }
      if (best < 0 || sum < best_sum) {
        best = g;
        best_sum = sum;
      }
    }
    return {best};
  }
  std::vector<int> best;
  int best_score = -1;
  IterateSets(available, size, [&](const std::vector<int>& set) {
    int s = SetScore(t, set, HamiPairScore);
    if (s > best_score) {
      best_score = s;
      best = set;
    }
  });
  return best;
}

std::vector<int> LowestIndexAllocate(const std::vector<int>& available, int size) {
  if (size <= 0 || static_cast<int>(available.size()) < size) return {};
  std::vector<int> sorted = available;
  std::sort(sorted.begin(), sorted.end());
  sorted.resize(size);
  return sorted;
}

}  // namespace vgpu::topo
