#include "sched/scheduler.h"

#include <algorithm>
#include <limits>

namespace vgpu::sched {

void ScorePlugin::NormalizeScores(std::span<int64_t> scores) const {
  if (scores.empty()) return;
  auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const int64_t low = *lo;
  const int64_t range = *hi - low;
  for (int64_t& s : scores) s = range == 0 ? 0 : (s - low) * 100 / range;
}

Result<Scheduler> Scheduler::Create(Cluster* cluster, std::unique_ptr<Policy> policy,
                                    std::vector<NodeId> node_order) {
  if (cluster == nullptr) return Status::InvalidArgument("scheduler needs a cluster");
  if (policy == nullptr || policy->score == nullptr || policy->gpus == nullptr) {
    return Status::InvalidArgument("policy needs a score plugin and a GPU selector");
  }
  std::vector<uint8_t> seen(cluster->num_nodes(), 0);
  for (NodeId n : node_order) {
    if (n >= cluster->num_nodes()) {
      return Status::InvalidArgument("node order names node " + std::to_string(n) +
                                     " but the cluster has " +
                                     std::to_string(cluster->num_nodes()) + " nodes");
    }
    if (seen[n] != 0) {
      return Status::InvalidArgument("node order repeats node " + std::to_string(n));
    }
    seen[n] = 1;
  }
  return Scheduler(cluster, std::move(policy), std::move(node_order));
}

Scheduler::Scheduler(Cluster* cluster, std::unique_ptr<Policy> policy, std::vector<NodeId> order)
    : cluster_(cluster), policy_(std::move(policy)), order_(std::move(order)) {
  in_order_.assign(cluster_->num_nodes(), 0);
  for (NodeId n : order_) in_order_[n] = 1;
  SyncNodes();
}

void Scheduler::SyncNodes() {
  const size_t n = cluster_->num_nodes();
  if (in_order_.size() < n) in_order_.resize(n, 0);
  for (NodeId id = 0; id < n; ++id) {
    if (in_order_[id] == 0) {
      in_order_[id] = 1;
      order_.push_back(id);
    }
  }
  rank_.assign(n, 0);
  for (size_t i = 0; i < order_.size(); ++i) rank_[order_[i]] = static_cast<uint32_t>(i);
}

void Scheduler::ObservePod(const PodRequest& r) {
  for (auto& o : policy_->observers) o->Observe(r);
}

bool Scheduler::Feasible(const PodRequest& r, NodeId n) const {
  if (!cluster_->Fits(r, n, policy_->fit)) return false;
  for (const auto& f : policy_->filters) {
    if (!f->Filter(r, *cluster_, n)) return false;
  }
  return true;
}

uint32_t Scheduler::KeyId(const PodRequest& r) {
  PodRequest key = policy_->score->ScoreKey(r);
  auto it = key_ids_.find(key);
  if (it != key_ids_.end()) return it->second;
  if (key_ids_.size() >= kMaxCachedKeys) {  // a long-lived cluster saw too many shapes: start over
    key_ids_.clear();
    cache_.clear();
  }
  const uint32_t id = static_cast<uint32_t>(key_ids_.size());
  key_ids_.emplace(key, id);
  cache_.emplace_back();
  return id;
}

int64_t Scheduler::ScoreOf(const PodRequest& r, uint32_t key_id, NodeId n) {
  ScorePlugin& score = *policy_->score;
  if (!score.Cacheable()) {
    ++stats_.scored;
    return score.Score(r, *cluster_, n);
  }
  bool hit = false;
  const int64_t s = cache_[key_id].Get(
      *cluster_, n, score.Epoch(), [&] { return score.Score(r, *cluster_, n); }, &hit);
  ++(hit ? stats_.cache_hits : stats_.scored);
  return s;
}

Result<Placement> Scheduler::Schedule(const PodRequest& r, Rng& rng) {
  VGPU_RETURN_IF_ERROR(ValidateRequest(r));
  if (order_.size() != cluster_->num_nodes()) SyncNodes();
  ++stats_.decisions;
  // Scan in id order (sequential memory); the node order only breaks ties.
  feasible_.clear();
  const NodeId num_nodes = static_cast<NodeId>(cluster_->num_nodes());
  for (NodeId n = 0; n < num_nodes; ++n) {
    if (Feasible(r, n)) feasible_.push_back(n);
  }
  if (feasible_.empty()) return Status::ResourceExhausted("no node fits the pod");
  ScorePlugin& score = *policy_->score;
  score.PreScore(r, *cluster_, feasible_, rng);
  const uint32_t key_id = score.Cacheable() ? KeyId(r) : 0;
  NodeId best = feasible_[0];
  int64_t best_score = std::numeric_limits<int64_t>::min();
  for (NodeId n : feasible_) {
    const int64_t s = ScoreOf(r, key_id, n);
    if (s > best_score || (s == best_score && rank_[n] < rank_[best])) {
      best_score = s;
      best = n;
    }
  }
  Placement p;
  p.node = best;
  p.gpus = r.num_gpus == 0 ? 0 : policy_->gpus->SelectGpus(r, *cluster_, best, rng);
  if (GpuCount(p.gpus) != r.num_gpus) {
    return Status::Internal("GPU selector '" + std::string(policy_->gpus->Name()) + "' chose " +
                            std::to_string(GpuCount(p.gpus)) + " GPUs for a pod asking " +
                            std::to_string(r.num_gpus));
  }
  return p;
}

Status Scheduler::Reserve(PodKey key, const PodRequest& r, const Placement& p) {
  VGPU_RETURN_IF_ERROR(cluster_->Reserve(key, r, p, policy_->fit));
  for (auto& rp : policy_->reservers) rp->Reserve(r, *cluster_, p);
  return Status::Ok();
}

bool Scheduler::Unreserve(PodKey key) {
  const Cluster::Reservation* res = cluster_->FindReservation(key);
  if (res == nullptr) return false;
  const Cluster::Reservation copy = *res;
  cluster_->Unreserve(key);
  for (auto& rp : policy_->reservers) rp->Unreserve(copy.request, *cluster_, copy.placement);
  return true;
}

std::vector<NodeId> Scheduler::FilterNodes(const PodRequest& r,
                                           std::span<const NodeId> nodes) const {
  std::vector<NodeId> out;
  for (NodeId n : nodes) {
    if (n < cluster_->num_nodes() && Feasible(r, n)) out.push_back(n);
  }
  return out;
}

std::vector<int64_t> Scheduler::RawScores(const PodRequest& r, std::span<const NodeId> nodes,
                                          Rng& rng) {
  if (order_.size() != cluster_->num_nodes()) SyncNodes();
  std::vector<NodeId> valid;
  for (NodeId n : nodes) {
    if (n < cluster_->num_nodes()) valid.push_back(n);
  }
  ScorePlugin& score = *policy_->score;
  score.PreScore(r, *cluster_, valid, rng);
  const uint32_t key_id = score.Cacheable() ? KeyId(r) : 0;
  std::vector<int64_t> out;
  out.reserve(nodes.size());
  for (NodeId n : nodes) {
    out.push_back(n < cluster_->num_nodes() ? ScoreOf(r, key_id, n) : 0);
  }
  return out;
}

std::vector<int64_t> Scheduler::ScoreNodes(const PodRequest& r, std::span<const NodeId> nodes,
                                           Rng& rng) {
  std::vector<int64_t> out = RawScores(r, nodes, rng);
  policy_->score->NormalizeScores(out);
  return out;
}

uint32_t Scheduler::TieRank(NodeId n) {
  if (order_.size() != cluster_->num_nodes()) SyncNodes();
  return n < rank_.size() ? rank_[n] : std::numeric_limits<uint32_t>::max();
}

}  // namespace vgpu::sched
