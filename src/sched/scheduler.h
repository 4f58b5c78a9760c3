// Scheduler: runs a Policy's plugins over a Cluster to place one pod at a time.
//
// Contract:
// - Schedule() filters every node (built-in resource fit, then the policy's filters), scores the
//   feasible ones and returns the best node and the GPUs the policy's selector picks. Ties go to
//   the node that comes first in the node order given at construction (a permutation of the
//   cluster's nodes; nodes added to the cluster later come after, in id order). It does not
//   change the cluster: call Reserve() to commit. kResourceExhausted when no node fits.
// - Scores of cacheable plugins are memoized per (score key, node) and reused until the node's
//   version or the plugin's epoch changes, so a decision after one placement rescores only the
//   node that changed.
// - ObservePod() feeds the policy's observers; call it once per arriving pod, before Schedule().
// - FilterNodes()/ScoreNodes()/RawScores() serve a Kubernetes extender: they work on a caller's
//   node list; ScoreNodes returns normalized 0..100 scores, RawScores the policy's own scores (one
//   PreScore call, as in Schedule()), and TieRank() the node's place in the tie-break order, so
//   the caller can name the node Schedule() would choose among its list.
// - Holds a pointer to the cluster (not owned; must outlive the scheduler). Not thread-safe.
#pragma once

#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "common/rng.h"
#include "sched/cluster.h"
#include "sched/framework.h"
#include "sched/node_cache.h"

namespace vgpu::sched {

class Scheduler {
 public:
  // `node_order`: node ids, best tie-break first; must not repeat or name unknown nodes. Empty =
  // id order.
  static Result<Scheduler> Create(Cluster* cluster, std::unique_ptr<Policy> policy,
                                  std::vector<NodeId> node_order = {});

  const Policy& policy() const { return *policy_; }
  const Cluster& cluster() const { return *cluster_; }

  void ObservePod(const PodRequest& r);
  Result<Placement> Schedule(const PodRequest& r, Rng& rng);
  // Commits / releases through the cluster and tells the policy's reserve plugins.
  Status Reserve(PodKey key, const PodRequest& r, const Placement& p);
  bool Unreserve(PodKey key);

  // Extender support.
  bool Feasible(const PodRequest& r, NodeId n) const;
  std::vector<NodeId> FilterNodes(const PodRequest& r, std::span<const NodeId> nodes) const;
  std::vector<int64_t> ScoreNodes(const PodRequest& r, std::span<const NodeId> nodes, Rng& rng);
  std::vector<int64_t> RawScores(const PodRequest& r, std::span<const NodeId> nodes, Rng& rng);
  // Lower wins ties.
  uint32_t TieRank(NodeId n);

  struct Stats {
    uint64_t decisions = 0;
    uint64_t scored = 0;      // Score() calls
    uint64_t cache_hits = 0;  // scores reused
  };
  const Stats& stats() const { return stats_; }

 private:
  Scheduler(Cluster* cluster, std::unique_ptr<Policy> policy, std::vector<NodeId> order);
  void SyncNodes();
  int64_t ScoreOf(const PodRequest& r, uint32_t key_id, NodeId n);
  uint32_t KeyId(const PodRequest& r);

  static constexpr size_t kMaxCachedKeys = 4096;

  Cluster* cluster_;
  std::unique_ptr<Policy> policy_;
  std::vector<NodeId> order_;
  std::vector<uint32_t> rank_;  // rank_[node] = its position in order_ (lower wins ties)
  std::vector<uint8_t> in_order_;
  std::vector<NodeId> feasible_;
  std::unordered_map<PodRequest, uint32_t, PodRequestHash> key_ids_;
  std::vector<NodeCache<int64_t>> cache_;  // [key id]
  Stats stats_;
};

}  // namespace vgpu::sched
