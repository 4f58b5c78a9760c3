// Running a snapshot experiment over several policies and seeds, and aggregating the results.
//
// Contract:
// - RunExperiment runs every (policy, seed) pair with RunSnapshot, on up to `threads` threads.
//   Each run has its own cluster, scheduler and Rng, so results do not depend on the thread
//   count or timing. Policy names are checked (and policies created once) before anything runs.
// - Aggregate gives, per policy and arrived level, the mean and sample standard deviation over
//   the seeds (sd = 0 for one seed) of allocated %, unallocated % and fragmentation rate %.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "sim/snapshot.h"

namespace vgpu::sim {

struct ExperimentOptions {
  std::vector<std::string> policies;
  std::vector<uint64_t> seeds;
  double inflate = 1.3;
  int threads = 1;
  // Options per policy name (as listed in `policies`): key -> value (PolicyArgs::params).
  std::map<std::string, std::map<std::string, std::string>> params;
  // Called from the calling thread about every 100 ms with (pods done, pods expected).
  std::function<void(int64_t, int64_t)> on_progress;
};

struct PolicyRuns {
  std::string policy;
  std::vector<SeedResult> seeds;  // in the order of ExperimentOptions::seeds
};

Result<std::vector<PolicyRuns>> RunExperiment(const SnapshotInput& input,
                                              const ExperimentOptions& options);

struct Stat {
  double mean = 0;
  double sd = 0;
};
struct LevelStats {
  int arrived_pct = 0;
  Stat allocated, unallocated, frag_rate;
};
struct PolicySummary {
  std::string policy;
  std::vector<LevelStats> levels;  // ascending arrived_pct, levels every seed has
  double failed_pods = 0;          // mean over seeds
  double pods = 0;                 // mean over seeds
};

PolicySummary Aggregate(const PolicyRuns& runs);
// The level `pct` of a summary, or null.
const LevelStats* FindLevel(const PolicySummary& s, int pct);
Stat MeanSd(const std::vector<double>& values);

}  // namespace vgpu::sim
