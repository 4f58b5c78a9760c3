// PlacementState's narrow filter mode: the feasible nodes cut down to those the engine ranks
// best, the hold of a pod narrowed to one node, and the nodes a retried pod no longer gets (see
// the contract in placement_state.h).
#include <algorithm>

#include "k8s/placement_state.h"

namespace vgpu::k8s {
namespace {

constexpr size_t kMaxExcludedPods = 10000;

}  // namespace

void PlacementState::Narrow(const PodRef& pod, const PodGpuRequest& r, Memo& m,
                            const std::vector<sched::NodeId>& ids, const std::vector<size_t>& pos,
                            NodeVerdicts* out) {
  const auto narrow_out = [out](size_t i) {
    out->kind[i] = NodeVerdicts::kNarrowed;
    out->reason[i] = kNarrowedOut;
    --out->counts[NodeVerdicts::kFeasible];
    ++out->counts[NodeVerdicts::kNarrowed];
  };
  // Nodes this pod was narrowed to before without being bound there are left out, as long as
  // another feasible node remains.
  std::vector<sched::NodeId> cand;
  std::vector<size_t> cand_pos;
  const std::string uid(pod.uid);
  auto ex = uid.empty() ? excluded_.end() : excluded_.find(uid);
  for (size_t k = 0; k < ids.size(); ++k) {
    const bool left_out =
        ex != excluded_.end() && std::find(ex->second.begin(), ex->second.end(),
                                           engine_.node_names[ids[k]]) != ex->second.end();
    if (!left_out) {
      cand.push_back(ids[k]);
      cand_pos.push_back(pos[k]);
    }
  }
  if (cand.empty()) {  // every feasible node was tried: start over
    if (ex != excluded_.end()) excluded_.erase(ex);
    cand = ids;
    cand_pos = pos;
  } else if (cand.size() < ids.size()) {
    for (size_t k = 0; k < ids.size(); ++k) {
      if (std::find(cand_pos.begin(), cand_pos.end(), pos[k]) == cand_pos.end()) {
        narrow_out(pos[k]);
      }
    }
  }
  Rank(m, r, cand);
  const int64_t keep_from = kMaxExtenderPriority - options_.narrow_tolerance;
  size_t kept = 0, kept_at = kNoChoice;
  for (size_t k = 0; k < cand.size(); ++k) {
    if (m.scores[k] >= keep_from && m.feasible[k] != 0) {
      ++kept;
      kept_at = k;
    } else {
      narrow_out(cand_pos[k]);
    }
  }
  // One node left, and no node outside the engine: kube-scheduler can only bind it there.
  if (kept == 1 && out->counts[NodeVerdicts::kFeasible] == 1 && !uid.empty() &&
      pods_.count(uid) == 0 && m.variant[kept_at] >= 0) {
    Hold(pod, r, m.variants[static_cast<size_t>(m.variant[kept_at])], cand[kept_at]);
  }
}

void PlacementState::Hold(const PodRef& pod, const PodGpuRequest& r, const Variant& variant,
                          sched::NodeId id) {
  const std::string uid(pod.uid), ns(pod.ns), name(pod.name);
  if (r.HasGpus()) {
    Decide(uid, ns, name, r, variant, id, /*held=*/true);
    return;
  }
  Tracked t;
  t.ns = ns;
  t.name = name;
  t.host = r.host;
  t.node = engine_.node_names[id];
  t.held = true;
  t.generation = next_generation_++;
  t.deadline = options_.clock() + options_.assume_ttl;
  Track(uid, std::move(t));
}

void PlacementState::ReleaseHold(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end() || !it->second.held) return;
  if (excluded_.size() >= kMaxExcludedPods && excluded_.count(uid) == 0) excluded_.clear();
  excluded_[uid].push_back(it->second.node);
  Forget(uid);
}

}  // namespace vgpu::k8s
