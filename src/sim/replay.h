// The time-based replay: pods arrive at their (compressed) creation time, wait in a queue while
// they do not fit, run for their trace run time once placed, then leave. One policy, one seed, one
// allocation mode per run.
//
// Allocation modes:
// - kShared: each pod gets what it asks for (a share of a GPU in milli).
// - kWhole: each GPU pod is rounded up to whole GPUs (gpu_milli -> 1000 on each of its num_gpus
//   GPUs); CPU, memory and model constraints are unchanged. This is a cluster without GPU sharing.
//
// Protocol, with all randomness from one vgpu::Rng seeded with the seed, in this order:
//   1. with cluster_scale < 1, max(1, round(scale x nodes)) nodes are kept, stratified by node
//      type (same CPU, memory, GPU count, models and GPU memory) so the sample keeps the cluster's
//      mix: each type gets floor(scale x its count), the rest go to the largest remainders (ties
//      in random order), and the nodes of a type are drawn at random. The same sample for every
//      allocation mode and queue of one seed;
//   2. a random permutation of the kept nodes breaks score ties (as in the snapshot protocol);
//   3. the same Rng goes to the policy.
// Jobs that fit no node of the empty cluster (after rounding, in whole mode) can never start:
// they are counted as unplaceable and left out. Jobs arriving after the horizon are left out.
// Events at one instant: departures first (their nodes are noted as freed), then one queue scan
// (wait_queue.h), then arrivals in job order (the policy observes each arrival). A pod that starts
// at t with run time r departs at t + r.
// The run goes on past the horizon until every job that arrived within it has started and left,
// so every wait is known; counts of completed pods, the time integrals and the samples stop at the
// horizon. Waits of pods still queued at the horizon are therefore measured, not cut off.
//
// With a topology model (replay_topology.h), a multi-GPU pod's GPUs on a shaped node are chosen
// by the model's GPU choice and its run time is scaled by the model's run-time factor.
//
// Deterministic: the same inputs, policy, seed and options give the same result.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/rng.h"
#include "sched/cluster.h"
#include "sched/registry.h"
#include "sim/replay_topology.h"
#include "sim/replay_trace.h"
#include "sim/wait_queue.h"

namespace vgpu::sim {

enum class Allocation { kShared, kWhole };
std::string_view AllocationName(Allocation a);
// The request as allocated in mode `a`.
sched::PodRequest Allocated(const sched::PodRequest& r, Allocation a);

struct ReplayConfig {
  std::string policy = "default";
  std::map<std::string, std::string> policy_params;
  uint64_t seed = 42;
  Allocation allocation = Allocation::kShared;
  QueueDiscipline queue = QueueDiscipline::kFifo;
  double cluster_scale = 1.0;  // (0, 1]
  int64_t horizon_us = 0;      // > 0
  int64_t step_us = 0;         // time-series interval; 0: no samples
  // Server shapes and the communication share of multi-GPU pods (replay_topology.h); off when
  // no shapes are given.
  TopologyModel topology;
  // Called after every instant's events, for tests: the cluster and the waiting jobs.
  std::function<void(int64_t now_us, const sched::Cluster&, std::span<const uint32_t> waiting,
                     const std::function<bool(uint32_t, sched::NodeId)>& feasible)>
      on_instant;
};

// The state at one sample time (after every event at or before it).
struct ReplaySample {
  int64_t time_us = 0;
  double allocated_pct = 0;  // allocated GPU milli / capacity
  double requested_pct = 0;  // GPU milli the running pods asked for (shared sizes) / capacity
  double demand_pct = 0;     // what would run if nothing waited (shared sizes) / capacity
  int64_t running = 0;
  int64_t queued = 0;
  int64_t completed = 0;
};

struct ReplayResult {
  size_t nodes = 0;
  int64_t gpus = 0;
  int64_t jobs = 0;         // arrived within the horizon and placeable
  int64_t unplaceable = 0;  // fit no node of the empty cluster
  int64_t started = 0;      // by the horizon
  int64_t completed = 0;    // departed by the horizon
  int64_t queued_at_horizon = 0;
  double completed_gpu_hours = 0;  // requested (shared) GPU x run time of the completed pods
  double offered_pct = 0;          // requested GPU-time within [0, horizon] / capacity x horizon
  double offered_whole_pct = 0;    // the same with requests rounded up to whole GPUs
  double peak_demand_pct = 0;      // the most GPU (shared sizes) that would run at once if nothing
                                   // waited, within the horizon, / capacity
  // Queueing delay (start - arrival) over all `jobs`, in seconds.
  double wait_mean_s = 0, wait_p50_s = 0, wait_p99_s = 0, wait_max_s = 0;
  int64_t waited = 0;  // jobs that did not start on arrival
  // Time averages over [0, horizon].
  double mean_allocated_pct = 0;
  double mean_requested_pct = 0;
  double mean_queued = 0;
  int64_t max_queued = 0;
  int64_t last_start_us = 0;  // when the last job started
  int64_t makespan_us = 0;    // when the last job that is not censored left
  std::vector<ReplaySample> series;
  uint64_t decisions = 0;    // full scheduling decisions
  TopologyOutcome topology;  // when ReplayConfig::topology is on
};

// The jobs and nodes every run of an experiment shares. Nodes are name-sorted.
struct ReplayInput {
  std::vector<sched::NodeSpec> nodes;
  std::vector<ReplayJob> jobs;  // by arrival
  const sched::ModelRegistry* models = nullptr;
};

Result<ReplayResult> RunReplay(const ReplayInput& input, const ReplayConfig& config);

// Protocol step 1: the indices of the nodes kept at `scale` (name-sorted `nodes`), a stratified
// sample that keeps the mix of node types. Also used by the MIG replay (mig_replay.h).
std::vector<size_t> SampleNodes(const std::vector<sched::NodeSpec>& nodes, double scale, Rng& rng);

}  // namespace vgpu::sim
