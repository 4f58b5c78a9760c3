#include "bench/mig.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "mig/placement_bench.h"

namespace vgpu::bench {

MigOutcome RunMig(const MigRun& run, bool json, FILE* out) {
  // ours (learned mix), ours (the instances' mix), first-fit, HAMi.
  constexpr int kVariants = 4;
  constexpr mig::PlacementRule kRules[kVariants] = {
      mig::PlacementRule::kFragmentationAware, mig::PlacementRule::kFragmentationAware,
      mig::PlacementRule::kFirstFit, mig::PlacementRule::kHami};
  constexpr mig::MixSource kSources[kVariants] = {
      mig::MixSource::kLearned, mig::MixSource::kInstances, mig::MixSource::kLearned,
      mig::MixSource::kLearned};
  constexpr const char* kNames[kVariants] = {"ours", "ours-node-mix", "first-fit", "hami"};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  bool ours_best = true;
  MigOutcome outcome;
  if (!json) {
    std::fprintf(out, "%zu sequences x %d arrivals per model and mix, load %.2f\n",
                 run.seeds.size(), run.arrivals, run.load);
    std::fprintf(out, "%-10s %-12s %8s %9s %10s %8s %12s %10s\n", "MODEL", "MIX", "OURS",
                 "NODE-MIX", "FIRST-FIT", "HAMI", "VS-FIRSTFIT", "VS-HAMI");
  }
  for (const mig::ModelTable* t : run.tables) {
    for (const mig::BenchMix& mix : mig::StandardMixes(*t)) {
      mig::BenchOutcome sum[kVariants];
      for (uint64_t seed : run.seeds) {
        const mig::BenchSequence seq = mig::MakeSequence(*t, mix, seed, run.arrivals, run.load);
        for (int r = 0; r < kVariants; ++r) {
          const mig::BenchOutcome o = mig::Replay(*t, seq, kRules[r], kSources[r]);
          sum[r].arrivals += o.arrivals;
          sum[r].accepted += o.accepted;
          sum[r].accepted_slices += o.accepted_slices;
          sum[r].offered_slices += o.offered_slices;
        }
      }
      const double ours = sum[0].rate(), node_mix = sum[1].rate(), first = sum[2].rate(),
                   hami = sum[3].rate();
      const int worst_ours = std::min(sum[0].accepted, sum[1].accepted);
      ++outcome.rows;
      if (worst_ours < sum[2].accepted || worst_ours < sum[3].accepted) {
        ours_best = false;
        outcome.behind.push_back(std::string(t->key) + "/" + std::string(mix.name) + " (ours " +
                                 std::to_string(worst_ours) + ", first-fit " +
                                 std::to_string(sum[2].accepted) + ", HAMi " +
                                 std::to_string(sum[3].accepted) + " of " +
                                 std::to_string(sum[0].arrivals) + " accepted)");
      }
      const double low = std::min(ours, node_mix);
      if (json) {
        nlohmann::ordered_json row = {{"model", t->key}, {"mix", mix.name}};
        for (int r = 0; r < kVariants; ++r) {
          row[kNames[r]] = {{"accepted", sum[r].accepted},
                            {"arrivals", sum[r].arrivals},
                            {"rate", sum[r].rate()},
                            {"accepted_slices", sum[r].accepted_slices}};
        }
        rows.push_back(row);
      } else {
        std::fprintf(out, "%-10.*s %-12.*s %7.2f%% %8.2f%% %9.2f%% %7.2f%% %+10.2fpp %+8.2fpp\n",
                     static_cast<int>(t->key.size()), t->key.data(),
                     static_cast<int>(mix.name.size()), mix.name.data(), 100 * ours, 100 * node_mix,
                     100 * first, 100 * hami, 100 * (low - first), 100 * (low - hami));
      }
    }
  }
  if (json) {
    std::fprintf(out, "%s\n",
                 nlohmann::ordered_json({{"seeds", run.seeds.size()},
                                         {"arrivals", run.arrivals},
                                         {"load", run.load},
                                         {"ours_best", ours_best},
                                         {"rows", rows}})
                     .dump(2)
                     .c_str());
  }
  return outcome;
}

}  // namespace vgpu::bench
