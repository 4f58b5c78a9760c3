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
  Changed();
}

void PlacementState::RemoveNode(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (nodes_.erase(name) != 0) {
    dirty_ = true;
    Changed();
  }
}

void PlacementState::ReplaceNodes(std::map<std::string, NodeInventory> nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (nodes == nodes_) return;
  nodes_ = std::move(nodes);
  dirty_ = true;
  Changed();
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
  const std::vector<std::string_view> views(nodes.begin(), nodes.end());
  NodeVerdicts v;
  FilterVerdicts(request, views, &v);
  FilterResult out;
  out.feasible.reserve(v.counts[NodeVerdicts::kFeasible]);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (v.kind[i] == NodeVerdicts::kFeasible) {
      out.feasible.push_back(nodes[i]);
    } else {
      (v.kind[i] == NodeVerdicts::kFailed ? out.failed : out.unresolvable)
          .emplace(nodes[i], v.reasons[v.reason[i]]);
    }
  }
  return out;
}

std::vector<int64_t> PlacementState::Score(const PodGpuRequest& request,
                                           const std::vector<std::string>& nodes) {
  const std::vector<std::string_view> views(nodes.begin(), nodes.end());
  return ScoreViews(request, views);
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
    Changed();
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
