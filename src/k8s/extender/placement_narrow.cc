// PlacementState's narrow filter mode: the feasible nodes cut down to those the engine ranks
// best, the hold of a pod narrowed to one node (taken over by its bind, given way to any other
// bind, expired), and the nodes a retried pod no longer gets (see the contract in
// placement_state.h).
#include <algorithm>
#include <utility>

#include "k8s/extender/placement_state.h"

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

std::optional<AssumeTicket> PlacementState::AssumeOverHolds(
    const std::string& uid, const std::string& ns, const std::string& name,
    const PodGpuRequest& request, const std::vector<Variant>& variants, sched::NodeId id) {
  // The other pods' holds on this node, oldest first: the oldest is the likeliest to belong to a
  // pod that was rejected after its filter and will not be bound.
  std::vector<std::pair<uint64_t, std::string>> holds;
  const std::string& node = engine_.node_names[id];
  for (const auto& [other, t] : pods_) {
    if (t.held && other != uid && t.node == node && t.HoldsGpus()) {
      holds.emplace_back(t.generation, other);
    }
  }
  if (holds.empty()) return std::nullopt;
  std::sort(holds.begin(), holds.end());
  std::vector<std::string> displaced;
  std::optional<AssumeTicket> ticket;
  for (const auto& [generation, other] : holds) {
    Unplace(pods_.at(other));
    displaced.push_back(other);
    if ((ticket = DecideOnNode(uid, ns, name, request, variants, id))) break;
  }
  // The displaced holds that still fit on their GPUs stay, the newest first; the others are
  // released (their pods' binds decide afresh).
  for (auto it = displaced.rbegin(); it != displaced.rend(); ++it) {
    if (!RestoreHold(pods_.at(*it), id)) Forget(*it);
  }
  return ticket;
}

bool PlacementState::RestoreHold(Tracked& t, sched::NodeId n) {
  sched::PodRequest r;
  sched::GpuSet set = 0;
  for (const ContainerAssignment& c : t.assignment.containers) {
    for (const AssignedGpu& g : c.gpus) set |= sched::GpuSet{1} << g.index;
  }
  r.num_gpus = sched::GpuCount(set);
  r.gpu_milli = t.assignment.reserved_milli;
  r.gpu_memory_mib = t.assignment.reserved_memory_mib;
  bool fits = r.num_gpus > 0;
  sched::ForEachGpu(set, [&](int i) { fits = fits && ctx_.GpuUsable(r, *engine_.cluster, n, i); });
  const sched::PodKey key = next_key_++;
  if (!fits || !engine_.scheduler->Reserve(key, r, sched::Placement{n, set}).ok()) return false;
  Changed();
  t.keys.push_back(key);
  ChargeHost(t, n);
  return true;
}

}  // namespace vgpu::k8s
