#include "k8s/extender/placement_state.h"

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
    if (auto n = spec->find("schedulerName"); n != spec->end() && n->is_string()) {
      p.scheduler_name = n->get<std::string>();
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
  // The API server validated the quantities; one it did not is counted as nothing.
  if (auto host = PodHostRequestOf(pod)) p.host = *host;
  return p;
}

Result<PodInfo> PodInfoOf(const Json& pod, const RequestOptions& options) {
  auto p = PodInfoOf(pod);
  if (!p) return p;
  if (p->node_name.empty() && !p->assignment && !p->terminal) {
    if (auto r = ParsePodGpuRequest(pod, options)) p->requested = std::move(*r);
  }
  return p;
}

PlacementState::PlacementState(StateOptions options)
    : options_(std::move(options)), rng_(options_.seed) {}

Result<std::unique_ptr<PlacementState>> PlacementState::Create(StateOptions options) {
  if (options.request.default_memory_percent < 0 || options.request.default_memory_percent > 100) {
    return Status::InvalidArgument("the default GPU memory percentage must be 0..100");
  }
  if (options.narrow_tolerance < 0 || options.narrow_tolerance > kMaxExtenderPriority) {
    return Status::InvalidArgument("the narrow tolerance must be 0..10");
  }
  std::unique_ptr<PlacementState> s(new PlacementState(std::move(options)));
  Engine probe;  // validates the policy name and its parameters
  VGPU_RETURN_IF_ERROR(s->BuildEngine(&probe));
  return s;
}

void PlacementState::UpsertNode(const std::string& name, const NodeInventory& inventory,
                                const HostResources& allocatable) {
  std::lock_guard<std::mutex> lock(mu_);
  NodeEntry entry{inventory, allocatable};
  auto it = nodes_.find(name);
  if (it != nodes_.end() && it->second == entry) return;
  nodes_[name] = std::move(entry);
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

void PlacementState::ReplaceNodes(std::map<std::string, NodeEntry> nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (nodes == nodes_) return;
  nodes_ = std::move(nodes);
  dirty_ = true;
  Changed();
}

void PlacementState::ReplaceNodes(const std::map<std::string, NodeInventory>& nodes) {
  std::map<std::string, NodeEntry> entries;
  for (const auto& [name, inv] : nodes) entries[name] = NodeEntry{inv, {}};
  ReplaceNodes(std::move(entries));
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
    observed_.erase(pod.uid);
    excluded_.erase(pod.uid);
    return;
  }
  const bool decided = pod.assignment && !pod.assignment->node.empty();
  const bool bound = !pod.node_name.empty();
  auto it = pods_.find(pod.uid);
  if (it != pods_.end() && it->second.held && !decided && bound &&
      it->second.node != pod.node_name) {
    // Bound elsewhere without a decision of ours (another binder): the hold goes, and the pod
    // counts where it runs (below).
    Forget(pod.uid);
    it = pods_.end();
  }
  if (it != pods_.end()) {
    Tracked& t = it->second;
    if (!decided) {
      // Unbound without a decision: ours (a hold, a bind in flight) stands.
      if (!bound) return;
      if (t.HasGpus()) {  // an event older than our decision's annotation
        if (t.node == pod.node_name) {
          t.bound = true;
          t.held = false;
        }
        return;
      }
      if (t.node == pod.node_name && t.host == pod.host) {
        t.bound = true;
        t.held = false;
        return;
      }
      if (t.in_flight) return;  // our bind settles it
      // Bound elsewhere (another scheduler) or resized: count it where it is.
      Unplace(t);
      t.node = pod.node_name;
      t.host = pod.host;
      t.bound = true;
      t.held = false;
      t.generation = next_generation_++;
      PlaceNow(t);
      return;
    }
    if (t.assignment == *pod.assignment) {
      if (bound) {
        t.bound = true;
        t.held = false;
      }
      if (t.host != pod.host && !t.in_flight) {
        Unplace(t);
        t.host = pod.host;
        PlaceNow(t);
      }
      return;
    }
    // A different decision: a bound pod's is authoritative; an unbound one yields to ours while
    // our bind is in flight.
    if (!bound && t.in_flight) return;
    Unplace(t);
    t.assignment = *pod.assignment;
    t.node = t.assignment.node;
    t.host = pod.host;
    t.bound = bound;
    t.in_flight = false;
    t.held = false;
    t.generation = next_generation_++;
    t.deadline = pod.assigned_at.value_or(options_.clock()) + options_.assume_ttl;
    PlaceNow(t);
    return;
  }
  if (!decided && !bound) {
    // A pending pod of ours arriving: the policy sees it now, placed or not.
    if (pod.requested && !dirty_ && engine_.scheduler && !options_.scheduler_name.empty() &&
        pod.scheduler_name == options_.scheduler_name) {
      ObserveRequest(pod.uid, *pod.requested);
    }
    return;
  }
  if (!decided && pod.host.IsZero()) return;  // nothing to count
  if (decided) {
    if (auto ex = expired_decisions_.find(pod.uid); ex != expired_decisions_.end()) {
      if (!bound && ex->second == *pod.assignment) return;  // a late event
      expired_decisions_.erase(ex);
    }
  }
  Tracked t;
  t.ns = pod.ns;
  t.name = pod.name;
  if (decided) t.assignment = *pod.assignment;
  t.node = decided ? t.assignment.node : pod.node_name;
  t.host = pod.host;
  t.bound = bound;
  t.generation = next_generation_++;
  t.deadline = pod.assigned_at.value_or(options_.clock()) + options_.assume_ttl;
  // A pod first seen already placed on an engine node (a restart, another scheduler) is shown to
  // the policy as one that arrived.
  if (!dirty_ && engine_.scheduler && NodeIdOf(t.node)) {
    sched::PodRequest r;
    r.cpu_milli = t.host.cpu_milli;
    r.memory_mib = t.host.memory_mib;
    if (t.HasGpus()) {
      int gpus = 0;
      int32_t milli = t.assignment.reserved_milli;
      for (const ContainerAssignment& c : t.assignment.containers) {
        if (!c.init) gpus += static_cast<int>(c.gpus.size());
        for (const AssignedGpu& g : c.gpus) milli = std::max(milli, g.milli);
      }
      r.num_gpus = std::clamp(gpus, 1, sched::kMaxGpusPerNode);
      r.gpu_milli = std::clamp<int32_t>(milli, 1, sched::kGpuMilli);
    }
    ObserveOnce(pod.uid, r, {}, {});
  }
  Track(pod.uid, std::move(t));
}

void PlacementState::RemovePod(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  Forget(uid);
  observed_.erase(uid);
  excluded_.erase(uid);
}

void PlacementState::ReplacePods(const std::vector<PodInfo>& pods) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::string> listed;
    for (const PodInfo& p : pods) listed.insert(p.uid);
    std::vector<std::string> gone;
    for (const auto& [uid, t] : pods_) {
      if (!t.in_flight && !t.held && listed.count(uid) == 0) gone.push_back(uid);
    }
    for (const std::string& uid : gone) Forget(uid);
  }
  for (const PodInfo& p : pods) UpsertPod(p);
}

FilterResult PlacementState::Filter(const PodGpuRequest& request,
                                    const std::vector<std::string>& nodes, const PodRef& pod) {
  const std::vector<std::string_view> views(nodes.begin(), nodes.end());
  NodeVerdicts v;
  FilterVerdicts(pod, request, views, &v);
  FilterResult out;
  out.feasible.reserve(v.counts[NodeVerdicts::kFeasible]);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (v.kind[i] == NodeVerdicts::kFeasible) {
      out.feasible.push_back(nodes[i]);
    } else {
      (v.kind[i] == NodeVerdicts::kFailed ? out.failed : out.unresolvable)
          .emplace(nodes[i], v.reasons[v.reason[i]]);
      if (v.kind[i] == NodeVerdicts::kNarrowed) ++out.narrowed;
    }
  }
  return out;
}

std::vector<int64_t> PlacementState::Score(const PodGpuRequest& request,
                                           const std::vector<std::string>& nodes,
                                           const PodRef& pod) {
  const std::vector<std::string_view> views(nodes.begin(), nodes.end());
  return ScoreViews(pod, request, views);
}

Result<AssumeTicket> PlacementState::Assume(const std::string& uid, const std::string& ns,
                                            const std::string& name, const PodGpuRequest& request,
                                            const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  ObserveRequest(uid, request);
  if (auto it = pods_.find(uid); it != pods_.end()) {
    Tracked& t = it->second;
    if (t.in_flight) {
      return Status::AlreadyExists("a bind of pod " + ns + "/" + name + " is already in progress");
    }
    if (t.node == node && (t.Placed() || !t.HasGpus())) {
      // A retry of an earlier attempt, or the bind of a filter's hold: its decision stands.
      t.in_flight = true;
      t.held = false;
      t.generation = next_generation_++;
      t.deadline = options_.clock() + options_.assume_ttl;
      return AssumeTicket{t.assignment, t.generation};
    }
    if (!t.held && t.HasGpus() && t.HoldsGpus()) {
      // The pod holds GPUs on another node: bound there, or an earlier bind whose outcome is
      // unknown. Moving it could leave a running pod uncounted; the caller settles it first.
      return Status::FailedPrecondition(
          "pod " + ns + "/" + name +
          (t.bound ? " is already bound to " : " has an unsettled decision for ") + t.node);
    }
    Forget(uid);  // a hold elsewhere, or counted nowhere: decide afresh
  }
  auto id = NodeIdOf(node);
  if (!request.HasGpus()) {
    // Its CPU and memory count on that node from now on (kube-scheduler's view decided the fit).
    Tracked t;
    t.ns = ns;
    t.name = name;
    t.host = request.host;
    t.node = node;
    t.in_flight = true;
    t.generation = next_generation_++;
    t.deadline = options_.clock() + options_.assume_ttl;
    AssumeTicket ticket{PodAssignment{}, t.generation};
    ticket.assignment.node = node;
    if (!uid.empty() && !request.host.IsZero()) Track(uid, std::move(t));
    return ticket;
  }
  if (!id || engine_.schedulable[*id] == 0) {
    return Status::FailedPrecondition("node " + node + " has no vgpu GPU inventory");
  }
  if (request.AsksMigProfile()) return AssumeMig(uid, ns, name, request, *id);
  std::string why_none;
  std::vector<Variant> variants = Variants(request, &why_none);
  if (variants.empty())
    return Status::ResourceExhausted("pod " + ns + "/" + name + ": " + why_none);
  if (auto ticket = DecideOnNode(uid, ns, name, request, variants, *id)) return *ticket;
  if (auto ticket = AssumeOverHolds(uid, ns, name, request, variants, *id)) return *ticket;
  std::string mig_why;  // a one-GPU pod with a memory size may take a MIG instance instead
  if (HasMigGpus(*id)) {
    auto mig = AssumeMig(uid, ns, name, request, *id);
    if (mig) return mig;
    if (auto why = MigChoiceOn(request, *id); !why) mig_why = "; MIG: " + why.error().message();
  }
  return Status::ResourceExhausted(
      "node " + node + " has no room for pod " + ns + "/" + name + ": " +
      ReasonText(variants, CouldEverFit(request, variants, *id)) + mig_why);
}

std::optional<AssumeTicket> PlacementState::DecideOnNode(
    const std::string& uid, const std::string& ns, const std::string& name,
    const PodGpuRequest& request, const std::vector<Variant>& variants, sched::NodeId id) {
  // The memory class the policy scores best on this node (the smallest on ties).
  ctx_.pod = &request;
  const Variant* best = nullptr;
  int64_t best_score = 0;
  for (const Variant& v : variants) {
    if (!engine_.scheduler->Feasible(v.request, id)) continue;
    if (variants.size() == 1) {
      best = &v;
      break;
    }
    const std::vector<sched::NodeId> one = {id};
    const int64_t s = engine_.scheduler->RawScores(v.request, one, rng_)[0];
    if (best == nullptr || s > best_score) {
      best = &v;
      best_score = s;
    }
  }
  if (best == nullptr) {
    // kube-scheduler found the CPU and memory free where this state does not (a pod it has not
    // told us about yet is gone): place the GPUs all the same.
    for (const Variant& v : variants) {
      sched::PodRequest gpus_only = v.request;
      gpus_only.cpu_milli = gpus_only.memory_mib = 0;
      if (engine_.scheduler->Feasible(gpus_only, id)) {
        best = &v;
        break;
      }
    }
  }
  ctx_.pod = nullptr;
  if (best == nullptr) return std::nullopt;
  return Decide(uid, ns, name, request, *best, id, false);
}

std::optional<PlacementState::Expired> PlacementState::UnsettledElsewhere(const std::string& uid,
                                                                          const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end() || it->second.in_flight || it->second.held || !it->second.HoldsGpus() ||
      it->second.node == node) {
    return std::nullopt;
  }
  return Expired{uid, it->second.ns, it->second.name, it->second.generation};
}

void PlacementState::BindSucceeded(const std::string& uid, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  excluded_.erase(uid);
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
  std::vector<std::string> holds;
  for (const auto& [uid, t] : pods_) {
    if (t.bound || t.in_flight || t.deadline > now) continue;
    if (t.held) {
      holds.push_back(uid);
    } else {
      out.push_back(Expired{uid, t.ns, t.name, t.generation});
    }
  }
  // A hold wrote nothing to the API server: it is released here, without asking.
  for (const std::string& uid : holds) {
    ++expired_;
    ReleaseHold(uid);
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
  if (it->second.held) {
    ReleaseHold(uid);
    return std::nullopt;
  }
  if (!it->second.HasGpus()) {
    Forget(uid);
    return std::nullopt;
  }
  PodAssignment released = it->second.assignment;
  if (expired_decisions_.size() >= 10000) expired_decisions_.clear();
  expired_decisions_[uid] = released;
  Forget(uid);
  return released;
}

void PlacementState::ConfirmBound(const std::string& uid, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it != pods_.end() && it->second.generation == generation) {
    it->second.bound = true;
    it->second.held = false;
  }
}

PlacementState::Counts PlacementState::counts() {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  Counts c;
  c.nodes = nodes_.size();
  for (const auto& [name, entry] : nodes_) c.gpus += entry.inventory.gpus.size();
  for (const auto& [uid, t] : pods_) {
    if (t.held) ++c.pods_held;
    if (!t.HasGpus() || t.held) continue;
    if (!t.HoldsGpus()) {
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
