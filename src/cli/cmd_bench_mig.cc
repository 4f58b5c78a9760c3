// vgpu bench mig: MIG placement quality. Random arrival/departure sequences of MIG profile
// requests (mixes small-heavy, large-heavy, uniform) on one GPU per model, replayed under our
// fragmentation-aware rule (with the mix learned from the arrivals, and with the mix of the
// instances the GPU holds, as the scheduler's ChooseMig), first-fit in placement order (NVIDIA's
// default) and HAMi's order; reports each rule's acceptance rate and our margin, that of the
// lower of our two variants (src/mig/placement_bench.h).
//
//   vgpu bench mig [--model H100-80GB,H200] [--seeds 1000-1019] [--arrivals 5000] [--load 1.3]
//   [--json]
//
// Exit status 0, or 1 when either variant of ours accepts fewer requests than another rule on
// some mix.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/mig_commands.h"
#include "mig/placement_bench.h"
#include "sim/options.h"

namespace vgpu::cli {

int RunBenchMig(int argc, char** argv) {
  std::vector<std::string> models = {"H100-80GB", "H200"};
  std::string seeds = "1000-1019";
  int arrivals = 5000;
  double load = 1.3;
  bool json = false;
  CLI::App app(
      "Measures MIG placement quality: random arrival/departure sequences of profile requests on "
      "one GPU, the same sequences replayed under each placement rule (ours, first-fit in "
      "placement order, HAMi's order); prints the acceptance rates and our margins.\n"
      "Exit status: 0 when ours (with either mix) accepts at least as many requests as first-fit "
      "and HAMi on every model and mix, 1 otherwise (the rows where it does not are named on "
      "stderr), 2 for bad input.",
      "vgpu bench mig");
  app.add_option("--model", models, "GPU models, comma separated (default H100-80GB,H200)")
      ->delimiter(',');
  app.add_option("--seeds", seeds,
                 "the seeds of the sequences per model and mix: A, A-B or a list of both joined "
                 "by ',' (default 1000-1019)");
  app.add_option("--arrivals", arrivals, "requests per sequence (default 5000)")
      ->check(CLI::Range(1, 10000000));
  app.add_option("--load", load,
                 "offered load: mean memory slices requested at once / 8 (default 1.3)")
      ->check(CLI::Range(0.01, 100.0));
  app.add_flag("--json", json, "print JSON");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  Result<std::vector<uint64_t>> seed_list = sim::ParseSeedList(seeds);
  if (!seed_list) {
    std::fprintf(stderr, "vgpu bench mig: %s\n",
                 seed_list.error().WithContext("--seeds").message().c_str());
    return kExitBadInput;
  }
  std::vector<const mig::ModelTable*> tables;
  for (const std::string& m : models) {
    Result<const mig::ModelTable*> t = mig::LookupModel(m);
    if (!t) {
      std::fprintf(stderr, "vgpu bench mig: --model: %s\n", t.error().message().c_str());
      return kExitBadInput;
    }
    tables.push_back(*t);
  }
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
  std::vector<std::string> behind;  // "MODEL/MIX (ours N, first-fit N, HAMi N of N)"
  int rows_total = 0;
  if (!json) {
    std::printf("%zu sequences x %d arrivals per model and mix, load %.2f\n", seed_list->size(),
                arrivals, load);
    std::printf("%-10s %-12s %8s %9s %10s %8s %12s %10s\n", "MODEL", "MIX", "OURS", "NODE-MIX",
                "FIRST-FIT", "HAMI", "VS-FIRSTFIT", "VS-HAMI");
  }
  for (const mig::ModelTable* t : tables) {
    for (const mig::BenchMix& mix : mig::StandardMixes(*t)) {
      mig::BenchOutcome sum[kVariants];
      for (uint64_t seed : *seed_list) {
        const mig::BenchSequence seq = mig::MakeSequence(*t, mix, seed, arrivals, load);
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
      ++rows_total;
      if (worst_ours < sum[2].accepted || worst_ours < sum[3].accepted) {
        ours_best = false;
        behind.push_back(std::string(t->key) + "/" + std::string(mix.name) + " (ours " +
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
        std::printf("%-10.*s %-12.*s %7.2f%% %8.2f%% %9.2f%% %7.2f%% %+10.2fpp %+8.2fpp\n",
                    static_cast<int>(t->key.size()), t->key.data(),
                    static_cast<int>(mix.name.size()), mix.name.data(), 100 * ours, 100 * node_mix,
                    100 * first, 100 * hami, 100 * (low - first), 100 * (low - hami));
      }
    }
  }
  if (json) {
    std::printf("%s\n", nlohmann::ordered_json({{"seeds", seed_list->size()},
                                                {"arrivals", arrivals},
                                                {"load", load},
                                                {"ours_best", ours_best},
                                                {"rows", rows}})
                            .dump(2)
                            .c_str());
  }
  if (!ours_best) {
    std::string rows;
    for (const std::string& b : behind) rows += (rows.empty() ? "" : "; ") + b;
    std::fprintf(stderr,
                 "vgpu bench mig: exit 1: our placement accepted fewer requests than first-fit or "
                 "HAMi on %zu of %d model/mix rows: %s\n",
                 behind.size(), rows_total, rows.c_str());
  }
  return ours_best ? kExitOk : kExitFailure;
}

}  // namespace vgpu::cli
