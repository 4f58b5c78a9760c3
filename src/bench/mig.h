// `vgpu bench mig`: MIG placement quality. Random arrival/departure sequences of MIG profile
// requests (mig/placement_bench.h: mixes small-heavy, large-heavy, uniform) on one GPU per model,
// replayed under our fragmentation-aware rule (with the mix learned from the arrivals, and with
// the mix of the instances the GPU holds, as the scheduler's ChooseMig), first-fit in placement
// order (NVIDIA's default) and HAMi's order; each rule's acceptance rate and our margin, that of
// the lower of our two variants. src/cli's cmd_bench_mig.cc reads the flags.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "mig/profiles.h"

namespace vgpu::bench {

// A run as the flags give it (checked there).
struct MigRun {
  std::vector<const mig::ModelTable*> tables;
  std::vector<uint64_t> seeds;  // the sequences per model and mix
  int arrivals = 5000;          // requests per sequence
  double load = 1.3;            // mean memory slices requested at once / 8
};

struct MigOutcome {
  int rows = 0;  // model/mix rows
  // The rows where either variant of ours accepted fewer requests than first-fit or HAMi:
  // "MODEL/MIX (ours N, first-fit N, HAMi N of N accepted)".
  std::vector<std::string> behind;
};

// Replays every model and mix and writes the report to `out`: a table, each row as soon as it is
// done, or with `json` one JSON document at the end.
MigOutcome RunMig(const MigRun& run, bool json, FILE* out);

}  // namespace vgpu::bench
