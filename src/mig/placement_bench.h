// The MIG placement-quality benchmark (`vgpu bench mig`): random arrival/departure sequences of
// profile requests on one GPU, replayed under each placement rule; the acceptance rate measures
// how much each rule's placements strand slices.
//
// Contract:
// - A sequence is generated from (table, mix, seed, arrivals, load) alone, so every rule sees
//   the same requests: request i arrives at time i with a profile drawn from the mix and a
//   lifetime drawn from an exponential distribution; the mean lifetime makes the offered load
//   `load` times the GPU's 8 memory slices. An accepted request holds its instance until it
//   departs; a refused one is lost (no queue).
// - ours learns the mix online (RequestMix::Observe on every arrival, before placing), or takes
//   it from the GPU's instances (MixSource).
// Pure and deterministic (common/rng.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "mig/choice.h"

namespace vgpu::mig {

struct BenchMix {
  std::string_view name;        // "small-heavy", "large-heavy", "uniform"
  std::vector<double> weights;  // per profile index of the table, >= 0
};

// The three standard mixes for `table`: weights by compute slices (1g, 1g+me, 1g 2-slice, 2g,
// 3g, 4g, 7g).
std::vector<BenchMix> StandardMixes(const ModelTable& table);

struct BenchSequence {
  std::vector<int> profiles;      // per arrival
  std::vector<double> lifetimes;  // per arrival
};
BenchSequence MakeSequence(const ModelTable& table, const BenchMix& mix, uint64_t seed,
                           int arrivals, double load);

struct BenchOutcome {
  int arrivals = 0;
  int accepted = 0;
  int64_t accepted_slices = 0;  // memory slices of the accepted requests
  int64_t offered_slices = 0;
  double rate() const { return arrivals ? static_cast<double>(accepted) / arrivals : 0; }
};
// Where ours takes its request mix from: learned online from every arrival (RequestMix), the
// instances the GPU holds when the request arrives (MixOfInstances, what the scheduler's
// ChooseMig uses), or uniform. The other rules use no mix.
enum class MixSource { kLearned, kInstances, kUniform };
BenchOutcome Replay(const ModelTable& table, const BenchSequence& seq, PlacementRule rule,
                    MixSource source = MixSource::kLearned);

}  // namespace vgpu::mig
