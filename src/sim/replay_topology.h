// Topology in the time-based replay (docs/topology.md §7): multi-GPU pods' run time gets a
// communication share that depends on the GPU set they were given.
//
// Model (adjustable by `comm_share`, the fraction f of a job's run time spent communicating on
// the best set):
//   run time on set S = trace run time x ((1 - f) + f x best_k / busbw(S))
// where busbw(S) is the ring-bottleneck bus bandwidth of S (topo/bandwidth.h) and best_k the best
// bus bandwidth any k-subset of an empty node of that server shape offers. A job on the best set
// runs for its trace run time; on a set with half the bandwidth its communication takes twice as
// long. Single-GPU pods, and nodes without a shape, keep their trace run time.
//
// Server shapes: node n of g GPUs gets the (i mod m)-th of the m listed presets with g GPUs, i
// counting the nodes of g GPUs in cluster order; nodes whose GPU count no listed preset has get
// no shape.
//
// GPU choice inside the node, for multi-GPU pods on nodes with a shape, among the node's GPUs
// that fit one share of the pod (sched::Cluster::GpuFits):
//   policy        the placement policy's own choice (no override)
//   vgpu          topo::ChooseSet (the extender's choice)
//   lowest-index  the lowest-index GPUs that fit
//   besteffort    go-gpuallocator's besteffort (topo/besteffort.h)
// On nodes without a shape, and for single-GPU pods, the policy's choice stands.
//
// Pods that require NVLink (sched::PodRequest::require_nvlink: the trace's `topology` column or
// `vgpu sim --require-nvlink`, docs/topology.md "Requiring NVLink") go only on shaped nodes
// where the GPUs that fit them hold an NVLink-connected set (NvlinkFilter, the extender's rule),
// and get such a set whatever the choice rule (the rule's own set when it is connected, else
// topo::ChooseSet's with require_nvlink). A node without a shape has no known links: it never
// takes them.
//
// Thread safety: a TopologyPlacer belongs to one run (its Evaluators memoise).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "sched/cluster.h"
#include "sched/framework.h"
#include "topo/bandwidth.h"

namespace vgpu::sim {

enum class GpuChoice { kPolicy, kVgpu, kLowestIndex, kBestEffort };
std::string_view GpuChoiceName(GpuChoice c);
Result<GpuChoice> ParseGpuChoice(std::string_view name);

struct TopologyModel {
  std::vector<std::string> shapes;  // preset names (topo/presets.h); empty: the model is off
  double comm_share = 0.3;          // f in [0, 1)
  GpuChoice choice = GpuChoice::kVgpu;
  bool enabled() const { return !shapes.empty(); }
};

// kInvalidArgument for an unknown preset or a share outside [0, 1).
Status CheckTopologyModel(const TopologyModel& model);

// What the model saw in one run, over the multi-GPU pods that started on nodes with a shape.
struct TopologyOutcome {
  int64_t multi_jobs = 0;      // multi-GPU pods started on a node with a shape
  double bandwidth_ratio = 0;  // mean busbw(S) / best_k
  double run_factor = 0;       // mean run-time factor (1 = trace run time)
  double best_share = 0;       // share given a set as good as the best on an empty node
  // Job completion time (departure - arrival) in seconds, over every job of the run and over
  // the multi-GPU jobs on shaped nodes.
  double jct_mean_s = 0;
  double multi_jct_mean_s = 0;
  double multi_jct_p99_s = 0;
};

class TopologyPlacer {
 public:
  // Shapes the nodes of `cluster` (once its nodes are added).
  static Result<std::unique_ptr<TopologyPlacer>> Create(const sched::Cluster& cluster,
                                                        const TopologyModel& model);

  // The GPUs the pod gets on `node` (the policy chose `policy_gpus`) and its run-time factor.
  sched::GpuSet Choose(const sched::Cluster& cluster, sched::NodeId node,
                       const sched::PodRequest& request, sched::GpuSet policy_gpus,
                       double* run_factor, double* bandwidth_ratio);
  bool Shaped(sched::NodeId node) const { return node < shape_of_.size() && shape_of_[node] >= 0; }
  // Whether the GPUs of `node` that fit one share of `request` hold an NVLink-connected set of
  // its size (false on a node without a shape).
  bool HasNvlinkSet(const sched::Cluster& cluster, sched::NodeId node,
                    const sched::PodRequest& request) const;

 private:
  TopologyModel model_;
  std::vector<std::unique_ptr<topo::Evaluator>> shapes_;  // one per distinct preset
  std::vector<int> shape_of_;                             // per node: index into shapes_, or -1
  std::vector<std::vector<topo::GpuMask>> nvlink_;        // per shape: NVLink adjacency
  std::vector<std::vector<double>> best_;                 // per shape, per k: best_k
};

// The placement engine's filter for require_nvlink pods (TopologyPlacer::HasNvlinkSet); others
// pass. `placer` may be null (no shapes): such pods then go nowhere.
class NvlinkFilter final : public sched::FilterPlugin {
 public:
  explicit NvlinkFilter(const TopologyPlacer* placer) : placer_(placer) {}
  std::string_view Name() const override { return "vgpu-require-nvlink"; }
  bool Filter(const sched::PodRequest& r, const sched::Cluster& c, sched::NodeId n) const override;

 private:
  const TopologyPlacer* placer_;
};

}  // namespace vgpu::sim
