// vgpu bench mig: MIG placement quality. Random arrival/departure sequences of MIG profile
// requests (mixes small-heavy, large-heavy, uniform) on one GPU per model, replayed under our
// fragmentation-aware rule (with the mix learned from the arrivals, and with the mix of the
// instances the GPU holds, as the scheduler's ChooseMig), first-fit in placement order (NVIDIA's
// default) and HAMi's order; reports each rule's acceptance rate and our margin, that of the
// lower of our two variants (src/mig/placement_bench.h). The flags are read here; the run is
// bench/mig.h's.
//
//   vgpu bench mig [--model H100-80GB,H200] [--seeds 1000-1019] [--arrivals 5000] [--load 1.3]
//   [--json]
//
// Exit status 0, or 1 when either variant of ours accepts fewer requests than another rule on
// some mix.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench/mig.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "mig/profiles.h"
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
  bench::MigRun run;
  run.tables = std::move(tables);
  run.seeds = *seed_list;
  run.arrivals = arrivals;
  run.load = load;
  const bench::MigOutcome outcome = bench::RunMig(run, json, stdout);
  if (!outcome.behind.empty()) {
    std::string rows;
    for (const std::string& b : outcome.behind) rows += (rows.empty() ? "" : "; ") + b;
    std::fprintf(stderr,
                 "vgpu bench mig: exit 1: our placement accepted fewer requests than first-fit or "
                 "HAMi on %zu of %d model/mix rows: %s\n",
                 outcome.behind.size(), outcome.rows, rows.c_str());
  }
  return outcome.behind.empty() ? kExitOk : kExitFailure;
}

}  // namespace vgpu::cli
