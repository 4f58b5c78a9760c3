// The table of a replay with a topology model (replay_topology.h): one row per (GPU choice,
// policy, queue, load point, allocation mode), means over seeds of the topology outcome, and
// each choice's mean job completion times relative to vgpu's.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/replay_experiment.h"

namespace vgpu::sim {

struct TopologyRow {
  GpuChoice choice = GpuChoice::kVgpu;
  std::string policy;
  QueueDiscipline queue = QueueDiscipline::kFifo;
  size_t load = 0;
  Allocation allocation = Allocation::kShared;
  double multi_jobs = 0, bandwidth_ratio = 0, run_factor = 0, best_share = 0;
  double jct_mean_s = 0, multi_jct_mean_s = 0, multi_jct_p99_s = 0;
  double unplaceable = 0;  // pods that fit no node of the empty cluster (NVLink requirements)
};

// Means over seeds, in the order of `experiments` and then grid order.
std::vector<TopologyRow> SummarizeTopology(
    const std::vector<std::pair<GpuChoice, ReplayExperiment>>& experiments);

std::string FormatTopologyTable(const std::vector<TopologyRow>& rows, const ReplayPlan& plan,
                                const std::string& trace);
std::string TopologyJson(const std::vector<TopologyRow>& rows, const ReplayPlan& plan);

}  // namespace vgpu::sim
