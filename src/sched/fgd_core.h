// FgdCore: the state FGD's score and GPU choice share: the target workload as a FragModel, a
// per-node cache of F_n(M) for the node's current state, and (online mode) a learner of the
// workload from the pods seen so far.
//
// FGD's decision for pod r on node n (fgd_score.go of the FGD simulator):
//   delta(n') = F_n(M) - F_n'(M), n' = n after placing r (CPU and the chosen GPUs taken),
//   score     = int64(100 * sigmoid(delta / 1000)).
// A sharing pod tries every fitting GPU and keeps the best (lowest index among equal scores);
// other pods take the fitting GPUs with the least free milli (whole GPUs: lowest index first).
//
// Online mode: Observe() counts every arriving pod. The typical set is recomputed on a geometric
// schedule (when the pods seen have grown by `check_growth` since the last check) and adopted only
// if it differs materially from the one in use: another set of specs, or weights that moved by
// more than `tolerance` in total (L1). Each adoption bumps epoch(), which invalidates cached
// scores. Before the first pod is observed the model is empty and every node scores 50.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/cluster.h"
#include "sched/frag.h"
#include "sched/node_cache.h"
#include "sched/workload.h"

namespace vgpu::sched {

struct FgdOnlineOptions {
  double coverage = 0.95;
  double check_growth = 0.02;  // re-check the learned set every 2% more pods
  double tolerance = 0.02;     // adopt it when weights moved by more than this (L1)
};

class FgdCore {
 public:
  // Fixed target workload.
  explicit FgdCore(std::vector<WorkloadSpec> workload);
  // Learned online.
  FgdCore(FgdOnlineOptions options, const ModelRegistry* names);

  void Observe(const PodRequest& r);
  uint64_t epoch() const { return epoch_; }
  const FragModel& model() const { return model_; }
  uint64_t adoptions() const { return adoptions_; }

  // F_n(M) of node n as it is now (cached per node version and epoch).
  double FragNow(const Cluster& c, NodeId n);
  // FGD's score for r on n, and the GPUs FGD would take (if `gpus` is not null).
  int64_t Evaluate(const PodRequest& r, const Cluster& c, NodeId n, GpuSet* gpus);

 private:
  void MaybeAdopt();

  FragModel model_;
  uint64_t epoch_ = 0;
  bool online_ = false;
  FgdOnlineOptions options_;
  const ModelRegistry* names_ = nullptr;
  WorkloadCounter counter_;
  int64_t next_check_ = 1;
  uint64_t adoptions_ = 0;
  NodeCache<double> frag_now_;
};

}  // namespace vgpu::sched
