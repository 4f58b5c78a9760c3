#include "mig/placement_bench.h"

#include <cmath>
#include <queue>

#include "common/rng.h"

namespace vgpu::mig {
namespace {

// Weight of a profile by its kind: 1g, 1g+me, 1g with 2 memory slices, 2g, 3g, 4g, 7g.
int Kind(const Profile& p) {
  if (p.compute_slices == 1) return p.media_extensions ? 1 : (p.memory_slices == 2 ? 2 : 0);
  switch (p.compute_slices) {
    case 2:
      return 3;
    case 3:
      return 4;
    case 4:
      return 5;
    default:
      return 6;
  }
}

BenchMix MixOf(const ModelTable& table, std::string_view name, const double (&by_kind)[7]) {
  BenchMix mix{name, {}};
  for (const Profile& p : table.profiles) mix.weights.push_back(by_kind[Kind(p)]);
  return mix;
}

}  // namespace

std::vector<BenchMix> StandardMixes(const ModelTable& table) {
  static constexpr double kSmall[7] = {0.40, 0.05, 0.20, 0.20, 0.10, 0.03, 0.02};
  static constexpr double kLarge[7] = {0.10, 0.02, 0.08, 0.10, 0.35, 0.20, 0.15};
  static constexpr double kUniform[7] = {1, 1, 1, 1, 1, 1, 1};
  return {MixOf(table, "small-heavy", kSmall), MixOf(table, "large-heavy", kLarge),
          MixOf(table, "uniform", kUniform)};
}

BenchSequence MakeSequence(const ModelTable& table, const BenchMix& mix, uint64_t seed,
                           int arrivals, double load) {
  double total = 0, mean_slices = 0;
  for (size_t q = 0; q < mix.weights.size(); ++q) total += mix.weights[q];
  for (size_t q = 0; q < mix.weights.size(); ++q) {
    mean_slices += mix.weights[q] / total * table.profiles[q].memory_slices;
  }
  // One arrival per time unit: offered slices = mean lifetime * mean slices.
  const double mean_life = load * table.memory_slices / mean_slices;
  Rng rng(seed);
  BenchSequence seq;
  for (int i = 0; i < arrivals; ++i) {
    double u = rng.UniformDouble() * total;
    int q = 0;
    while (q + 1 < static_cast<int>(mix.weights.size()) && u >= mix.weights[q]) {
      u -= mix.weights[q];
      ++q;
    }
    seq.profiles.push_back(q);
    seq.lifetimes.push_back(-std::log(1.0 - rng.UniformDouble()) * mean_life);
  }
  return seq;
}

BenchOutcome Replay(const ModelTable& table, const BenchSequence& seq, PlacementRule rule,
                    MixSource source) {
  Layout layout{&table, {}};
  RequestMix mix(table);
  using Departure = std::pair<double, int>;  // (time, start)
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures;
  BenchOutcome out;
  for (size_t i = 0; i < seq.profiles.size(); ++i) {
    const double now = static_cast<double>(i);
    while (!departures.empty() && departures.top().first <= now) {
      (void)Remove(&layout, departures.top().second);
      departures.pop();
    }
    const int q = seq.profiles[i];
    if (source == MixSource::kLearned) {
      mix.Observe(q);
    } else if (source == MixSource::kInstances) {
      mix = MixOfInstances(table, std::span<const Layout>(&layout, 1));
    }
    ++out.arrivals;
    out.offered_slices += table.profiles[q].memory_slices;
    const std::optional<int> start = ChooseStart(layout, q, rule, &mix);
    if (!start) continue;
    (void)Add(&layout, {q, *start});
    ++out.accepted;
    out.accepted_slices += table.profiles[q].memory_slices;
    departures.push({now + seq.lifetimes[i], *start});
  }
  return out;
}

}  // namespace vgpu::mig
