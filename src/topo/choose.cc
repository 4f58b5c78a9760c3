#include "topo/choose.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "topo/nvlink_sets.h"

namespace vgpu::topo {
namespace {

double Binomial(int n, int k) {
  if (k < 0 || k > n) return 0;
  double r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

void ForEachSubset(const std::vector<int>& gpus, int k, const std::function<void(GpuMask)>& f) {
  int n = static_cast<int>(gpus.size());
  if (k < 1 || k > n) return;
  std::vector<int> idx(k);
  for (int i = 0; i < k; ++i) idx[i] = i;
  while (true) {
    GpuMask m = 0;
    for (int i : idx) m |= GpuMask{1} << gpus[i];
    f(m);
    int level = k - 1;
    while (level >= 0 && idx[level] == n - k + level) --level;
    if (level < 0) return;
    ++idx[level];
    for (int i = level + 1; i < k; ++i) idx[i] = idx[i - 1] + 1;
  }
}

int NumaSpan(const Topology& t, GpuMask set) {
  uint64_t nodes = 0;  // NUMA nodes 0..62; unknown (-1) and larger ones share bit 63
  for (GpuMask m = set; m != 0; m &= m - 1) {
    int numa = t.Gpu(__builtin_ctz(m)).numa_node;
    nodes |= uint64_t{1} << (numa >= 0 && numa < 63 ? numa : 63);
  }
  return __builtin_popcountll(nodes);
}

// Beam search: sets grown one GPU at a time, ranked by (slowest pair, summed pairs).
std::vector<GpuMask> BeamCandidates(Evaluator& ev, GpuMask free, int k) {
  struct Partial {
    GpuMask mask;
    double min_pair;
    double sum;
    int span;  // NUMA nodes
  };
  std::vector<int> gpus = MaskGpus(free);
  std::vector<Partial> beam;
  for (int g : gpus) beam.push_back({GpuMask{1} << g, 1e300, 0, 1});
  for (int size = 1; size < k; ++size) {
    std::vector<Partial> next;
    std::set<GpuMask> seen;
    for (const Partial& p : beam) {
      for (int g : gpus) {
        GpuMask bit = GpuMask{1} << g;
        if ((p.mask & bit) || !seen.insert(p.mask | bit).second) continue;
        Partial q{p.mask | bit, p.min_pair, p.sum, 0};
        for (GpuMask m = p.mask; m != 0; m &= m - 1) {
          int h = __builtin_ctz(m);
          q.min_pair = std::min(q.min_pair, ev.Pair(g, h));
          q.sum += ev.Pair(g, h);
        }
        q.span = NumaSpan(ev.topology(), q.mask);
        next.push_back(q);
      }
    }
    std::sort(next.begin(), next.end(), [](const Partial& a, const Partial& b) {
      if (a.min_pair != b.min_pair) return a.min_pair > b.min_pair;
      if (a.sum != b.sum) return a.sum > b.sum;
      if (a.span != b.span) return a.span < b.span;
      return a.mask < b.mask;
    });
    if (static_cast<int>(next.size()) > kBeamWidth) next.resize(kBeamWidth);
    beam = std::move(next);
  }
  std::vector<GpuMask> out;
  for (const Partial& p : beam) out.push_back(p.mask);
  return out;
}

std::vector<GpuMask> Candidates(Evaluator& ev, GpuMask free, int k, bool* exact) {
  std::vector<int> gpus = MaskGpus(free);
  std::vector<GpuMask> out;
  *exact = Binomial(static_cast<int>(gpus.size()), k) <= kExactSets;
  if (*exact) {
    ForEachSubset(gpus, k, [&](GpuMask m) { out.push_back(m); });
  } else {
    out = BeamCandidates(ev, free, k);
  }
  return out;
}

// True when every pair of GPUs in `free` has the same bandwidth. Ring bandwidth and pattern times
// depend on pair bandwidths only, so then every set of a size performs the same.
bool UniformPairs(const Evaluator& ev, GpuMask free) {
  std::vector<int> gpus = MaskGpus(free);
  if (gpus.size() < 2) return true;
  const double first = ev.Pair(gpus[0], gpus[1]);
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (size_t j = i + 1; j < gpus.size(); ++j) {
      if (ev.Pair(gpus[i], gpus[j]) != first) return false;
    }
  }
  return true;
}

// For two sets of the same size: true when `a`'s sorted GPU indices come first in lexicographic
// order (the lowest GPU in one set only is in `a`).
bool LowerIndices(GpuMask a, GpuMask b) {
  GpuMask diff = a ^ b;
  return diff != 0 && (a & diff & (~diff + 1)) != 0;
}

// The first k-subset of `free` in (NUMA span, GPU indices) order: objective (3) alone.
GpuMask FewestNumaLowestIndices(const Evaluator& ev, GpuMask free, int k) {
  GpuMask best = 0;
  int best_span = 0;
  ForEachSubset(MaskGpus(free), k, [&](GpuMask m) {
    int span = NumaSpan(ev.topology(), m);
    if (best == 0 || span < best_span || (span == best_span && LowerIndices(m, best))) {
      best = m;
      best_span = span;
    }
  });
  return best;
}

}  // namespace

double BestBusBandwidth(Evaluator& ev, GpuMask free, int k) {
  if (k < 2 || MaskCount(free) < k) return 0;
  double* memo = ev.BestMemo(free, k);
  if (*memo >= 0) return *memo;
  bool exact = true;
  double best = 0;
  for (GpuMask m : Candidates(ev, free, k, &exact)) best = std::max(best, ev.RingBusBandwidth(m));
  *memo = best;
  return best;
}

std::vector<int> BestRankOrder(Evaluator& ev, const CommPattern& pattern,
                               const std::vector<int>& gpus, double* seconds) {
  std::vector<int> ring = gpus.size() >= 3 ? ev.Ring(GpusMask(gpus)) : gpus;
  if (!pattern.OrderMatters() || gpus.size() > 8) {
    if (seconds != nullptr) *seconds = PatternSeconds(ev, pattern, ring);
    return ring;
  }
  std::vector<int> order = gpus;
  std::sort(order.begin(), order.end());
  std::vector<int> best = order;
  double best_time = PatternSeconds(ev, pattern, order);
  // Orders that give the same time by symmetry are skipped: a reversed pipeline, and
  // tensor-parallel groups swapped whole (the same groups, the same data-parallel lanes). The
  // first order of each class in lexicographic order is the one evaluated.
  const int k = static_cast<int>(order.size());
  auto canonical = [&](const std::vector<int>& o) {
    if (pattern.kind == CommPattern::Kind::kPipeline) return o.front() < o.back();
    if (pattern.kind == CommPattern::Kind::kTensorData && pattern.tp > 0) {
      for (int g = 0; g + 1 < pattern.dp && (g + 2) * pattern.tp <= k; ++g) {
        if (o[g * pattern.tp] > o[(g + 1) * pattern.tp]) return false;
      }
    }
    return true;
  };
  while (std::next_permutation(order.begin(), order.end())) {
    if (!canonical(order)) continue;
    double t = PatternSeconds(ev, pattern, order);
    if (t < best_time - 1e-15) {
      best_time = t;
      best = order;
    }
  }
  if (seconds != nullptr) *seconds = best_time;
  return best;
}

SetChoice ChooseSet(Evaluator& ev, GpuMask free, int k, const CommPattern& pattern,
                    const ChooseOptions& options) {
  SetChoice choice;
  if (k < 1 || MaskCount(free) < k) return choice;
  std::vector<GpuMask> nvlink;  // adjacency, with require_nvlink
  if (options.require_nvlink) {
    nvlink = NvlinkAdjacency(ev.topology());
    if (FindNvlinkSet(nvlink, free, k) == 0) return choice;
  }
  const auto allowed = [&](GpuMask set) {
    return !options.require_nvlink || NvlinkConnected(nvlink, set);
  };
  if (MaskCount(free) == k) {  // one set only
    std::vector<int> gpus = MaskGpus(free);
    choice.bus_bandwidth_gbps = ev.RingBusBandwidth(free);
    choice.gpus = BestRankOrder(ev, pattern, gpus, &choice.comm_seconds);
    return choice;
  }
  if (options.uniform_shortcut && UniformPairs(ev, free)) {
    const GpuMask set = FewestNumaLowestIndices(ev, free, k);
    if (allowed(set)) {  // with require_nvlink: uniform pairs are NVLink, or the search decides
      std::vector<int> gpus = MaskGpus(set);
      choice.bus_bandwidth_gbps = ev.RingBusBandwidth(set);
      choice.gpus = BestRankOrder(ev, pattern, gpus, &choice.comm_seconds);
      return choice;
    }
  }
  bool exact = true;
  std::vector<GpuMask> candidates = Candidates(ev, free, k, &exact);
  if (options.require_nvlink) {
    std::erase_if(candidates, [&](GpuMask m) { return !allowed(m); });
    // The beam search may miss every NVLink-connected set on a large node: one exists (checked
    // above), so the search's own stands in.
    if (candidates.empty()) candidates.push_back(FindNvlinkSet(nvlink, free, k));
  }
  // For patterns with an order, a full permutation search per set is bounded: the 16 best sets
  // by ring bandwidth are searched when the total would exceed ~200k orderings.
  bool ordered = pattern.OrderMatters() && k >= 2;
  if (ordered) {
    double perms = 1;
    for (int i = 2; i <= std::min(k, 8); ++i) perms *= i;
    if (perms * static_cast<double>(candidates.size()) > 2e5) {
      std::stable_sort(candidates.begin(), candidates.end(), [&](GpuMask a, GpuMask b) {
        return ev.RingBusBandwidth(a) > ev.RingBusBandwidth(b);
      });
      candidates.resize(std::min<size_t>(candidates.size(), 16));
      exact = false;
    }
  }
  // (1): the primary value per candidate, larger is better.
  std::vector<double> primary(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (k == 1) {
      primary[i] = 0;
    } else if (ordered) {
      double seconds = 0;
      BestRankOrder(ev, pattern, MaskGpus(candidates[i]), &seconds);
      primary[i] = seconds > 0 ? -seconds : 0;
    } else {
      primary[i] = ev.RingBusBandwidth(candidates[i]);
    }
  }
  double best = *std::max_element(primary.begin(), primary.end());
  double tolerance = std::abs(best) * options.tie_tolerance + 1e-12;
  // (2) and (3) among the near ties.
  GpuMask all = (ev.size() >= 32) ? ~GpuMask{0} : (GpuMask{1} << ev.size()) - 1;
  double whole[9] = {};
  const int kSizes[] = {2, 4, 8};
  if (options.lookahead) {
    for (int s : kSizes) whole[s] = BestBusBandwidth(ev, all, s);
  }
  // The near ties, fewest NUMA nodes first; on nodes of more than 8 GPUs the lookahead looks at
  // kLookaheadSets of them only, and only at sizes it can enumerate exactly.
  std::vector<size_t> ties;
  std::vector<int> spans(candidates.size(), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (primary[i] < best - tolerance) continue;
    spans[i] = NumaSpan(ev.topology(), candidates[i]);
    ties.push_back(i);
  }
  std::stable_sort(ties.begin(), ties.end(), [&](size_t a, size_t b) {
    if (spans[a] != spans[b]) return spans[a] < spans[b];
    return LowerIndices(candidates[a], candidates[b]);
  });
  const bool large = ev.size() > 8;
  if (large && ties.size() > static_cast<size_t>(kLookaheadSets)) ties.resize(kLookaheadSets);
  GpuMask chosen = 0;
  double chosen_future = -1;
  for (size_t i : ties) {
    GpuMask rest = free & ~candidates[i];
    double future = 0;
    if (options.lookahead) {
      for (int s : kSizes) {
        int left = MaskCount(rest);
        if (whole[s] <= 0 || left < s) continue;
        if (large && Binomial(left, s) > kLookaheadSubsets) continue;
        future += BestBusBandwidth(ev, rest, s) / whole[s];
      }
    }
    // Ties are in (span, indices) order: only a strictly better future replaces the first.
    if (chosen == 0 || future > chosen_future + 1e-12) {
      chosen = candidates[i];
      chosen_future = future;
    }
  }
  std::vector<int> gpus = MaskGpus(chosen);
  choice.exact = exact;
  choice.bus_bandwidth_gbps = ev.RingBusBandwidth(chosen);
  choice.gpus = BestRankOrder(ev, pattern, gpus, &choice.comm_seconds);
  return choice;
}

}  // namespace vgpu::topo
