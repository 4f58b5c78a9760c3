// Reports of a time-based replay: a terminal table, the CSV time series, a JSON summary.
//
// Table: one block per (policy, queue, load point) with a row per allocation mode (completed pods
// and GPU-hours within the horizon, waits, time-averaged allocated and used GPU %, queue length,
// last start, makespan; means over seeds) and the shared/whole ratios; then, when there is more
// than one load point, policy or queue, a sweep table with one row per (policy, queue, load).
// CSV header: policy,queue,allocation,time_compress,cluster_scale,seed,time_s,allocated_gpu_pct,
// requested_gpu_pct,demand_gpu_pct,running_pods,queued_pods,completed_pods; one row per run and
// sample time.
#pragma once

#include <string>
#include <vector>

#include "sim/replay_experiment.h"

namespace vgpu::sim {

struct ReplayReportInfo {
  std::string trace;        // pod list name
  size_t pods_in_file = 0;  // rows of the pod list
  std::string run_time_from = "scheduled";
};

std::string FormatReplayTable(const ReplayExperiment& e, const ReplayPlan& plan,
                              const ReplayReportInfo& info);
std::string ReplayCsvText(const ReplayExperiment& e, const ReplayPlan& plan);
std::string ReplayJson(const ReplayExperiment& e, const ReplayPlan& plan,
                       const ReplayReportInfo& info);

}  // namespace vgpu::sim
