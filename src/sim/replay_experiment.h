// Running a time-based replay over a grid: policies x queue disciplines x load points x seeds x
// allocation modes, on a thread pool, and summarizing it.
//
// A load point is (time compression, cluster scale): the two ways to make the trace press on the
// cluster (docs/replay.md). Each load point has its own job list (arrivals depend on the
// compression) and its own horizon: the one given, or else the arrival of its last pod.
//
// Contract:
// - Policies, their options and the load points are checked before anything runs.
// - Every run has its own cluster, scheduler and Rng (replay.h), so results do not depend on the
//   thread count. Runs come back in grid order: policy, queue, load, seed, allocation (innermost).
// - Summaries average over seeds; the shared/whole ratios are taken per seed, then averaged.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "sim/experiment.h"
#include "sim/replay.h"

namespace vgpu::sim {

struct LoadPoint {
  double time_compress = 1.0;
  double cluster_scale = 1.0;
};

struct ReplayPlan {
  std::vector<std::string> policies = {"default"};
  std::map<std::string, std::map<std::string, std::string>> params;  // per policy
  std::vector<QueueDiscipline> queues = {QueueDiscipline::kFifo};
  std::vector<Allocation> allocations = {Allocation::kShared, Allocation::kWhole};
  std::vector<LoadPoint> loads = {LoadPoint{}};
  std::vector<uint64_t> seeds = {42};
  int64_t horizon_us = 0;  // 0: each load point's last arrival
  int64_t step_us = 0;     // time-series interval; 0: horizon / 400
  RunTimeFrom run_time_from = RunTimeFrom::kScheduled;
  bool include_pending = false;
  int threads = 1;
  TopologyModel topology;  // server shapes and communication share (replay_topology.h)
  // Called from the calling thread about every 100 ms with (runs done, runs in all).
  std::function<void(int64_t, int64_t)> on_progress;
};

struct ReplayRun {
  std::string policy;
  QueueDiscipline queue = QueueDiscipline::kFifo;
  size_t load = 0;  // index into ReplayPlan::loads
  uint64_t seed = 0;
  Allocation allocation = Allocation::kShared;
  double wall_s = 0;  // run time of this one replay
  ReplayResult result;
};

struct ReplayExperiment {
  std::vector<JobList> job_lists;   // per load point (jobs, and what was skipped)
  std::vector<int64_t> horizon_us;  // per load point
  std::vector<ReplayRun> runs;
};

// `nodes` in any order (they are sorted by name); `pods` as loaded.
Result<ReplayExperiment> RunReplayExperiment(std::vector<sched::NodeSpec> nodes,
                                             const std::vector<TimedPod>& pods,
                                             const sched::ModelRegistry* models,
                                             const ReplayPlan& plan);

// Mean over seeds of one (policy, queue, load, allocation) cell.
struct ReplayCell {
  std::string policy;
  QueueDiscipline queue = QueueDiscipline::kFifo;
  size_t load = 0;
  Allocation allocation = Allocation::kShared;
  double nodes = 0, gpus = 0, jobs = 0, unplaceable = 0;
  double offered_pct = 0, offered_whole_pct = 0, peak_demand_pct = 0;
  double completed = 0, completed_gpu_hours = 0, queued_at_horizon = 0, waited = 0;
  double wait_mean_s = 0, wait_p50_s = 0, wait_p99_s = 0, wait_max_s = 0;
  double mean_allocated_pct = 0, mean_requested_pct = 0, mean_queued = 0, max_queued = 0;
  double last_start_s = 0, makespan_s = 0;
  double wall_s = 0;  // mean run time of one replay
};
// shared / whole of one (policy, queue, load), mean±sd over seeds of the per-seed ratios.
struct ReplayRatio {
  std::string policy;
  QueueDiscipline queue = QueueDiscipline::kFifo;
  size_t load = 0;
  Stat completed, gpu_hours, wait_mean;
  double completed_min = 0, completed_max = 0;  // over seeds
};

std::vector<ReplayCell> SummarizeCells(const ReplayExperiment& e);
// Only when both allocation modes ran.
std::vector<ReplayRatio> SummarizeRatios(const ReplayExperiment& e);

}  // namespace vgpu::sim
