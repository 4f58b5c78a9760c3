// CafgdCore: the state shared by the cafgd policy's plugins (policy_cafgd.cc): a workload learned
// online from the pods observed so far, the joint CPU/GPU fragmentation model built from it
// (joint_frag.h), and a per-node cache of J_n(M) for the node's current state.
//
// Learning: Observe() counts every arriving pod (WorkloadCounter). The typical set (top specs by
// count up to `coverage` of the pods) is recomputed when the pods seen have grown by
// `check_growth` since the last check, and adopted when its specs changed or its weights moved by
// more than `tolerance` (L1). Each adoption bumps epoch(), which invalidates cached scores. With
// `prior` = a > 0 the weights are (count + a) / sum(count + a) over the chosen specs, so a model
// learned from few pods stays close to uniform over the specs seen.
//
// Model pressure: UpdatePressure() (called once per decision, from PreScore; recomputed only when
// the cluster's stamp or the adopted workload changed since the last call) spreads each
// constrained learned spec's share of the GPU demand over its allowed models in proportion to their
// free milli; pressure_g = (all free milli) * sum of (share / free milli of the spec's models) over
// the specs that allow g, and a milli of model g costs scarcity * min(1, pressure_g)^power. The
// costs are adopted (epoch bump) when one moved by more than `tolerance`.
//
// Decision for pod r on node n: delta = J_n(M) - J_n'(M) - cost, n' = n after r (its CPU and GPUs
// taken); score = int64(resolution * sigmoid(delta / 1000)) * kCafgdTieScale + tie-break key. A
// sharing pod tries each fitting GPU and keeps the best (lowest index among equals); other pods
// take the fitting GPUs with the least free milli. Before the first pod is observed the model is
// empty and every node scores alike.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/cluster.h"
#include "sched/joint_frag.h"
#include "sched/model_set.h"
#include "sched/node_cache.h"
#include "sched/workload.h"

namespace vgpu::sched {

// Scores are primary * kCafgdTieScale + secondary (the tie-break key, 0 unless `tiebreak` is set).
inline constexpr int64_t kCafgdTieScale = int64_t{1} << 20;

struct CafgdOptions {
  double cpu_weight = 1.0;      // w_cpu of joint_frag.h
  bool cpu_mix = true;          // joint_frag.h's per-node mix form of the CPU term
  double prior = 0.0;           // pseudo-count added to every chosen spec's count
  double coverage = 0.95;       // typical-set coverage
  double check_growth = 0.1;    // re-learn every 10% more pods
  double tolerance = 0.05;      // adopt when weights (or model costs) moved by more than this
  double scarcity = 1.0;        // weight of the model-pressure cost (0 = off)
  double scarcity_power = 2.0;  // cost per milli = min(1, pressure)^power
  double resolution = 100;      // primary score = int(resolution * sigmoid(delta / 1000))
  int tiebreak = 0;             // secondary key: 0 none, 1 fewest free GPU milli left, 2 same for
                                // CPU-only pods only, 3 least free CPU left
  bool memory = false;  // the mix term also counts GPU milli that free host memory cannot feed
  bool sharing_best_fit = false;  // sharing pods take the fitting GPU with the least free milli
};

class CafgdCore {
 public:
  CafgdCore(CafgdOptions options, const ModelRegistry* names);
  // Diagnostic only: a fixed workload given in advance (as fgd has it); Observe() learns nothing.
  CafgdCore(CafgdOptions options, std::vector<WorkloadSpec> given);

  void Observe(const PodRequest& r);
  uint64_t epoch() const { return epoch_; }
  const JointFragModel& model() const { return model_; }
  int64_t seen() const { return counter_.total(); }
  const CafgdOptions& options() const { return options_; }

  // Recomputes the pressure on each GPU model from the learned workload and the cluster's free
  // GPU milli per model; bumps the epoch when a model's cost moved by more than 0.02.
  void UpdatePressure(const Cluster& c);
  double cost(ModelId m) const { return cost_[m]; }

  // J_n(M) of node n as it is now (cached per node version and epoch).
  double FragNow(const Cluster& c, NodeId n);
  // The score of r on n, and the GPUs it would take (if `gpus` is not null).
  int64_t Evaluate(const PodRequest& r, const Cluster& c, NodeId n, GpuSet* gpus);

 private:
  void MaybeAdopt();

  CafgdOptions options_;
  const ModelRegistry* names_;
  JointFragModel model_;
  std::vector<WorkloadSpec> adopted_;
  WorkloadCounter counter_;
  int64_t next_check_ = 1;
  double gpu_pod_memory_ = 0;  // host memory and GPU milli of the GPU pods observed
  double gpu_pod_milli_ = 0;
  bool fixed_ = false;
  uint64_t epoch_ = 0;
  NodeCache<double> frag_now_;
  double cost_[kMaxModels] = {};
  // The cluster state (Cluster::stamp) cost_ was last computed for, 0 = none: pressure depends
  // only on the cluster's free GPU milli per model and on adopted_.
  uint64_t pressure_stamp_ = 0;
};

}  // namespace vgpu::sched
