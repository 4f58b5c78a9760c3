#include "k8s/placement_state.h"

#include <algorithm>
#include <set>

#include "common/log.h"
#include "sched/registry.h"

namespace vgpu::k8s {

Result<PodInfo> PodInfoOf(const Json& pod) {
  PodInfo p;
  p.uid = MetaString(pod, "uid");
  p.ns = MetaString(pod, "namespace");
  p.name = MetaString(pod, "name");
  if (auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    if (auto n = spec->find("nodeName"); n != spec->end() && n->is_string()) {
      p.node_name = n->get<std::string>();
    }
  }
  if (auto st = pod.find("status"); st != pod.end() && st->is_object()) {
    if (auto ph = st->find("phase"); ph != st->end() && ph->is_string()) {
      p.terminal = *ph == "Succeeded" || *ph == "Failed";
    }
  }
  auto a = AssignmentOfPod(pod);
  if (!a) return a.error();
  p.assignment = std::move(*a);
  if (p.assignment && p.assignment->node.empty()) p.assignment->node = p.node_name;
  const std::string at = AnnotationOf(pod, kAssignedAtAnnotation);
  if (!at.empty()) {
    auto t = ParseTimestamp(at);
    if (t) p.assigned_at = *t;
  }
  return p;
}

PlacementState::PlacementState(StateOptions options)
    : options_(std::move(options)), rng_(options_.seed) {}

Result<std::unique_ptr<PlacementState>> PlacementState::Create(StateOptions options) {
  if (options.request.default_memory_percent < 0 || options.request.default_memory_percent > 100) {
    return Status::InvalidArgument("the default GPU memory percentage must be 0..100");
  }
  std::unique_ptr<PlacementState> s(new PlacementState(std::move(options)));
  Engine probe;  // validates the policy name and its parameters
  VGPU_RETURN_IF_ERROR(s->BuildEngine(&probe));
  return s;
}

void PlacementState::UpsertNode(const std::string& name, const NodeInventory& inventory) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  if (it != nodes_.end() && it->second == inventory) return;
  nodes_[name] = inventory;
  dirty_ = true;
}

void PlacementState::RemoveNode(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (nodes_.erase(name) != 0) dirty_ = true;
}

void PlacementState::ReplaceNodes(std::map<std::string, NodeInventory> nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (nodes == nodes_) return;
  nodes_ = std::move(nodes);
  dirty_ = true;
}

void PlacementState::Track(const std::string& uid, Tracked t) {
  auto [it, inserted] = pods_.insert_or_assign(uid, std::move(t));
  (void)inserted;
  PlaceNow(it->second);
}

void PlacementState::Forget(const std::string& uid) {
  // (expired_decisions_ is kept: it answers late events about the pod.)
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  Unplace(it->second);
  pods_.erase(it);
}

void PlacementState::UpsertPod(const PodInfo& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pod.uid.empty()) return;
  if (pod.terminal) {
    Forget(pod.uid);
    return;
  }
  auto it = pods_.find(pod.uid);
  if (!pod.assignment || pod.assignment->node.empty()) return;  // nothing to count (yet)
  if (it != pods_.end()) {
    Tracked& t = it->second;
    if (t.assignment == *pod.assignment) {
      if (!pod.node_name.empty()) t.bound = true;
      return;
    }
    // A different decision: a bound pod's is authoritative; an unbound one yields to ours while
    // our bind is in flight.
    if (pod.node_name.empty() && t.in_flight) return;
    Unplace(t);
    t.assignment = *pod.assignment;
    t.bound = !pod.node_name.empty();
    t.in_flight = false;
    t.generation = next_generation_++;
    t.deadline = pod.assigned_at.value_or(options_.clock()) + options_.assume_ttl;
    PlaceNow(t);
    return;
  }
  if (auto ex = expired_decisions_.find(pod.uid); ex != expired_decisions_.end()) {
    if (pod.node_name.empty() && ex->second == *pod.assignment) return;  // a late event
    expired_decisions_.erase(ex);
  }
  Tracked t;
  t.ns = pod.ns;
  t.name = pod.name;
  t.assignment = *pod.assignment;
  t.bound = !pod.node_name.empty();
  t.generation = next_generation_++;
  t.deadline = pod.assigned_at.value_or(options_.clock()) + options_.assume_ttl;
  Track(pod.uid, std::move(t));
}

void PlacementState::RemovePod(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  Forget(uid);
}

void PlacementState::ReplacePods(const std::vector<PodInfo>& pods) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::string> listed;
    for (const PodInfo& p : pods) listed.insert(p.uid);
    std::vector<std::string> gone;
    for (const auto& [uid, t] : pods_) {
      if (!t.in_flight && listed.count(uid) == 0) gone.push_back(uid);
    }
    for (const std::string& uid : gone) Forget(uid);
  }
  for (const PodInfo& p : pods) UpsertPod(p);
}

FilterResult PlacementState::Filter(const PodGpuRequest& request,
                                    const std::vector<std::string>& nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  FilterResult out;
  if (!request.HasGpus()) {
    out.feasible = nodes;
    return out;
  }
  std::vector<sched::NodeId> candidates;
  std::vector<std::string> names_of;  // parallel to candidates
  for (const std::string& name : nodes) {
    auto id = NodeIdOf(name);
    if (!id) {
      out.unresolvable[name] =
          "vgpu: node publishes no GPU inventory (" + std::string(kInventoryAnnotation) + ")";
    } else if (engine_.schedulable[*id] == 0) {
      out.unresolvable[name] =
          "vgpu: node runs HAMi's device plugin; vgpu schedules nodes whose "
          "vgpu node daemon publishes " +
          std::string(kInventoryAnnotation);
    } else {
      candidates.push_back(*id);
      names_of.push_back(name);
    }
  }
  std::string why_none;
  const std::vector<Variant> variants = Variants(request, &why_none);
  if (variants.empty()) {
    for (const std::string& name : names_of) out.unresolvable[name] = "vgpu: " + why_none;
    return out;
  }
  ctx_.pod = &request;
  std::vector<uint8_t> ok(candidates.size(), 0);
  for (const Variant& v : variants) {
    const std::vector<sched::NodeId> feasible =
        engine_.scheduler->FilterNodes(v.request, candidates);
    // Both lists are in candidate order: walk them together.
    size_t j = 0;
    for (size_t i = 0; i < candidates.size() && j < feasible.size(); ++i) {
      if (candidates[i] == feasible[j]) {
        ok[i] = 1;
        ++j;
      }
    }
  }
  out.feasible.reserve(candidates.size());
  std::string reasons[2];  // [could ever fit]
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (ok[i] != 0) {
      out.feasible.push_back(names_of[i]);
      continue;
    }
    const bool could = CouldEverFit(request, variants, candidates[i]);
    std::string& reason = reasons[could ? 1 : 0];
    if (reason.empty()) reason = ReasonText(variants, could);
    (could ? out.failed : out.unresolvable).emplace(names_of[i], reason);
  }
  ctx_.pod = nullptr;
  return out;
}

std::vector<int64_t> PlacementState::Score(const PodGpuRequest& request,
                                           const std::vector<std::string>& nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  std::vector<int64_t> out(nodes.size(), 0);
  if (!request.HasGpus() || !engine_.scheduler) return out;
  std::vector<sched::NodeId> ids;
  std::vector<size_t> pos;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto id = NodeIdOf(nodes[i]);
    if (id && engine_.schedulable[*id] != 0) {
      ids.push_back(*id);
      pos.push_back(i);
    }
  }
  ctx_.pod = &request;
  for (const Variant& v : Variants(request, nullptr)) {
    std::vector<sched::NodeId> feasible;
    std::vector<size_t> feasible_pos;
    for (size_t k = 0; k < ids.size(); ++k) {
      if (engine_.scheduler->Feasible(v.request, ids[k])) {
        feasible.push_back(ids[k]);
        feasible_pos.push_back(pos[k]);
      }
    }
    if (feasible.empty()) continue;
    const std::vector<int64_t> s = engine_.scheduler->ScoreNodes(v.request, feasible, rng_);
    for (size_t k = 0; k < s.size(); ++k) {
      const int64_t score = std::clamp<int64_t>(s[k], 0, 100) / 10;  // MaxExtenderPriority = 10
      out[feasible_pos[k]] = std::max(out[feasible_pos[k]], score);
    }
  }
  ctx_.pod = nullptr;
  return out;
}

Result<AssumeTicket> PlacementState::Assume(const std::string& uid, const std::string& ns,
                                            const std::string& name, const PodGpuRequest& request,
                                            const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  if (auto it = pods_.find(uid); it != pods_.end()) {
    Tracked& t = it->second;
    if (t.in_flight) {
      return Status::AlreadyExists("a bind of pod " + ns + "/" + name + " is already in progress");
    }
    if (t.assignment.node == node && !t.keys.empty()) {  // a retry of an earlier attempt
      t.in_flight = true;
      t.generation = next_generation_++;
      t.deadline = options_.clock() + options_.assume_ttl;
      return AssumeTicket{t.assignment, t.generation};
    }
    if (!t.keys.empty()) {
      // The pod holds GPUs on another node: bound there, or an earlier bind whose outcome is
      // unknown. Moving it could leave a running pod uncounted; the caller settles it first.
      return Status::FailedPrecondition(
          "pod " + ns + "/" + name +
          (t.bound ? " is already bound to " : " has an unsettled decision for ") +
          t.assignment.node);
    }
    Forget(uid);  // counted nowhere (its node is unknown): decide afresh
  }
  auto id = NodeIdOf(node);
  if (!id || engine_.schedulable[*id] == 0) {
    return Status::FailedPrecondition("node " + node + " has no vgpu GPU inventory");
  }
  std::string why_none;
  std::vector<Variant> variants = Variants(request, &why_none);
  if (variants.empty())
    return Status::ResourceExhausted("pod " + ns + "/" + name + ": " + why_none);
  ctx_.pod = &request;
  for (const Variant& v : variants) {  // smallest memory class first
    if (!engine_.scheduler->Feasible(v.request, *id)) continue;
    const sched::GpuSet gpus = engine_.selector->SelectGpus(v.request, *engine_.cluster, *id, rng_);
    if (sched::GpuCount(gpus) != v.request.num_gpus) continue;
    const sched::PodKey key = next_key_++;
    Status s = engine_.scheduler->Reserve(key, v.request, sched::Placement{*id, gpus});
    if (!s.ok()) continue;
    engine_.scheduler->ObservePod(v.request);
    Tracked t;
    t.ns = ns;
    t.name = name;
    t.assignment = BuildAssignment(request, v, *id, gpus);
    t.in_flight = true;
    t.generation = next_generation_++;
    t.deadline = options_.clock() + options_.assume_ttl;
    t.keys.push_back(key);
    AssumeTicket ticket{t.assignment, t.generation};
    pods_.insert_or_assign(uid, std::move(t));
    ctx_.pod = nullptr;
    return ticket;
  }
  ctx_.pod = nullptr;
  return Status::ResourceExhausted("node " + node + " has no room for pod " + ns + "/" + name +
                                   ": " +
                                   ReasonText(variants, CouldEverFit(request, variants, *id)));
}

std::optional<PlacementState::Expired> PlacementState::UnsettledElsewhere(const std::string& uid,
                                                                          const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end() || it->second.in_flight || it->second.keys.empty() ||
      it->second.assignment.node == node) {
    return std::nullopt;
  }
  return Expired{uid, it->second.ns, it->second.name, it->second.generation};
}

void PlacementState::BindSucceeded(const std::string& uid, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end() || it->second.generation != generation) return;
  it->second.in_flight = false;
  it->second.bound = true;
}

void PlacementState::BindFailed(const std::string& uid, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end() || it->second.generation != generation) return;
  Forget(uid);
}

void PlacementState::BindUnknown(const std::string& uid, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end() || it->second.generation != generation) return;
  it->second.in_flight = false;
  it->second.deadline = options_.clock() + options_.assume_ttl;
}

std::vector<PlacementState::Expired> PlacementState::ExpiredAssumptions() {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = options_.clock();
  std::vector<Expired> out;
  for (const auto& [uid, t] : pods_) {
    if (!t.bound && !t.in_flight && t.deadline <= now) {
      out.push_back(Expired{uid, t.ns, t.name, t.generation});
    }
  }
  return out;
}

std::optional<PodAssignment> PlacementState::ExpireIfUnbound(const std::string& uid,
                                                             uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end() || it->second.generation != generation || it->second.bound ||
      it->second.in_flight) {
    return std::nullopt;
  }
  ++expired_;
  PodAssignment released = it->second.assignment;
  if (expired_decisions_.size() >= 10000) expired_decisions_.clear();
  expired_decisions_[uid] = released;
  Forget(uid);
  return released;
}

void PlacementState::ConfirmBound(const std::string& uid, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it != pods_.end() && it->second.generation == generation) it->second.bound = true;
}

PlacementState::Counts PlacementState::counts() {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  Counts c;
  c.nodes = nodes_.size();
  for (const auto& [name, inv] : nodes_) c.gpus += inv.gpus.size();
  for (const auto& [uid, t] : pods_) {
    if (t.keys.empty()) {
      ++c.pods_unplaced;
    } else if (t.bound) {
      ++c.pods_bound;
    } else {
      ++c.pods_assumed;
    }
  }
  c.rebuilds = rebuilds_;
  c.conflicts = conflicts_;
  c.expired = expired_;
  return c;
}

}  // namespace vgpu::k8s
