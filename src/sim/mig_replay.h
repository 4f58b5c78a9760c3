// The time-based replay on MIG GPUs (`vgpu sim --mode replay --mig MODEL`): the trace's pods
// arrive and depart as in the replay (replay.h), on a cluster whose every GPU is a mig-dynamic GPU
// of one MIG table (mig/profiles.h), so that the placement rules of mig/choice.h (ours, first-fit,
// HAMi's) can be compared on arrivals and departures rather than on one GPU.
//
// Protocol (deterministic; all randomness from Rng(seed)):
//   - nodes: the replay's stratified sample at `cluster_scale` (SampleNodes), node GPUs kept by
//     count (their model is replaced by the table's);
//   - a GPU pod asks for one instance on each of its num_gpus GPUs: the smallest profile (by
//     memory, then slices; never "+me") with at least gpu_milli/1000 of the GPU's memory, the
//     largest profile's memory being the whole GPU (HAMi's gpumem-percentage request served by
//     the smallest fitting profile). CPU-only pods are left out;
//   - events in time order, departures before arrivals at one instant; no queue: a pod that fits
//     nowhere when it arrives is refused (lost), as in `vgpu bench mig`;
//   - a pod fits a node with its CPU and memory free and num_gpus GPUs where the profile has a
//     feasible start. The GPU choice is the same for every rule, binpack: the fitting GPUs with
//     the fewest free memory slices first, node order breaking ties (ours breaks them by the
//     resulting layout's CapacityScore); on each chosen GPU the rule picks the start. Ours learns
//     the request mix of the whole cluster online (RequestMix, every arrival observed);
//   - measured over arrivals within the horizon: accepted / refused; stranded % at each refusal
//     (the free memory slices of the cluster / all of them: capacity that existed but could not
//     serve the request), averaged over refusals; used %, the time average of the used memory
//     slices / all over [0, horizon].
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "mig/choice.h"
#include "sched/types.h"
#include "sim/replay_trace.h"

namespace vgpu::sim {

struct MigReplayConfig {
  const mig::ModelTable* table = nullptr;
  mig::PlacementRule rule = mig::PlacementRule::kFragmentationAware;
  uint64_t seed = 42;
  double cluster_scale = 1.0;  // (0, 1]
  int64_t horizon_us = 0;      // > 0
};

struct MigReplayResult {
  size_t nodes = 0;
  int64_t gpus = 0;
  int64_t arrivals = 0;  // GPU pods arrived within the horizon
  int64_t accepted = 0;
  int64_t unplaceable = 0;  // ask for more GPUs than any node has (left out of arrivals)
  double stranded_pct = 0;  // mean over refusals
  double used_pct = 0;      // time average
  // Accepted per profile index of the table, and asked for.
  std::vector<int64_t> asked_by_profile, accepted_by_profile;
  double accepted_pct() const { return arrivals ? 100.0 * accepted / arrivals : 0; }
};

// The profile a GPU share of `gpu_milli` (1..1000) gets on `table`.
int ProfileForShare(const mig::ModelTable& table, int32_t gpu_milli);

// `nodes` name-sorted; `jobs` by arrival. kInvalidArgument for a missing table, a scale outside
// (0, 1] or a horizon <= 0.
Result<MigReplayResult> RunMigReplay(const std::vector<sched::NodeSpec>& nodes,
                                     const std::vector<ReplayJob>& jobs,
                                     const MigReplayConfig& config);

}  // namespace vgpu::sim
