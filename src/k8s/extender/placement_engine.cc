// PlacementState's engine side: building the engine from inventories and allocatable CPU and
// memory, translating requests into engine requests per memory class, placing tracked pods (their
// GPUs and their CPU and memory), and describing why a node fails.
#include <algorithm>
#include <cstdio>
#include <set>

#include "common/log.h"
#include "k8s/extender/placement_state.h"
#include "k8s/extender/placement_topology.h"
#include "sched/registry.h"
#include "topo/nvlink_sets.h"

namespace vgpu::k8s {

Status PlacementState::BuildEngine(Engine* e) const {
  e->models = std::make_unique<sched::ModelRegistry>();
  e->cluster = std::make_unique<sched::Cluster>();
  for (const auto& [name, entry] : nodes_) {
    const NodeInventory& inv = entry.inventory;
    sched::NodeSpec spec;
    spec.name = name;
    spec.cpu_milli = std::max<int64_t>(0, entry.allocatable.cpu_milli);
    spec.memory_mib = std::max<int64_t>(0, entry.allocatable.memory_mib);
    std::vector<GpuFacts> facts;
    topo::Topology topology = TopologyOfInventory(inv);
    const std::vector<topo::GpuMask> nvlink = topo::NvlinkAdjacency(topology);
    bool skip = false;
    // Engine GPU i is the inventory's i-th GPU by index; facts carry its UUID.
    for (const InventoryGpu& g : inv.gpus) {
      const std::string key = g.model + "/" + std::to_string(g.memory_mib);
      auto id = e->models->Intern(key);
      if (!id) {
        VGPU_LOG_ERROR("node %s left out: %s", name.c_str(), id.error().message().c_str());
        skip = true;
        break;
      }
      if (*id >= e->model_name.size()) {
        e->model_name.push_back(g.model);
        e->model_capacity.push_back(g.memory_mib);
      }
      spec.gpus.push_back(sched::GpuSpec{*id, g.memory_mib});
      facts.push_back(GpuFacts{g.uuid, g.healthy, g.units, g.mode,
                               facts.size() < nvlink.size() ? nvlink[facts.size()] : 0});
    }
    if (skip) continue;
    auto nid = e->cluster->AddNode(spec);
    if (!nid) {
      VGPU_LOG_ERROR("node %s left out: %s", name.c_str(), nid.error().message().c_str());
      continue;
    }
    e->facts.push_back(std::move(facts));
    e->schedulable.push_back(inv.source == InventorySource::kVgpu ? 1 : 0);
    e->node_names.push_back(name);
    e->topology.push_back(std::make_unique<topo::Evaluator>(std::move(topology)));
  }
  sched::PolicyArgs args;
  args.models = e->models.get();
  args.params = options_.policy_params;
  auto policy = sched::BuiltinPolicies().Create(options_.policy, args);
  if (!policy) return policy.error();
  (*policy)->filters.push_back(std::make_unique<ConstraintFilter>(&ctx_));
  auto selector = std::make_unique<ConstrainedSelector>(std::move((*policy)->gpus), &ctx_);
  e->selector = selector.get();
  (*policy)->gpus = std::move(selector);
  auto scheduler =
      sched::Scheduler::Create(e->cluster.get(), std::move(*policy), TieOrder(e->node_names));
  if (!scheduler) return scheduler.error();
  e->scheduler.emplace(std::move(*scheduler));
  return Status::Ok();
}

std::vector<sched::NodeId> PlacementState::TieOrder(const std::vector<std::string>& names) const {
  return NodeTieOrder(names, options_.seed);
}

void PlacementState::RebuildIfDirty() {
  if (!dirty_) return;
  Engine e;
  Status s = BuildEngine(&e);
  if (!s.ok()) {  // the policy was validated in Create(); this is a bug
    VGPU_LOG_ERROR("cannot build the placement engine: %s", s.ToString().c_str());
    return;
  }
  engine_ = std::move(e);
  engine_.by_name.Build(&engine_.node_names);
  engine_.host.assign(engine_.node_names.size(), HostLoad{});
  ctx_.gpus = &engine_.facts;
  ctx_.fit = engine_.scheduler->policy().fit;
  dirty_ = false;
  ++rebuilds_;
  Changed();
  // Bound pods first, then the rest, oldest decision first.
  std::vector<std::pair<std::string, Tracked*>> order;
  for (auto& [uid, t] : pods_) {
    t.keys.clear();
    t.host_node = -1;
    t.mig_placed = false;
    order.emplace_back(uid, &t);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    if (a.second->bound != b.second->bound) return a.second->bound;
    return a.second->generation < b.second->generation;
  });
  for (auto& [uid, t] : order) PlaceNow(*t);
  ReplayObservations();
}

std::optional<sched::NodeId> PlacementState::NodeIdOf(const std::string& name) const {
  return engine_.by_name.Find(name);  // engine ids are dense in the order nodes were added
}

void PlacementState::PlaceNow(Tracked& t) {
  if (dirty_ || !engine_.scheduler) return;  // placed by the next rebuild
  Changed();
  auto nid = NodeIdOf(t.node);
  if (!nid) return;  // the node is not known (yet): placed when it appears
  if (t.HasGpus()) PlaceGpus(t, *nid);
  t.mig_placed = AssignmentHasMig(t.assignment);
  ChargeHost(t, *nid);
}

void PlacementState::PlaceGpus(Tracked& t, sched::NodeId n) {
  const std::vector<GpuFacts>& facts = engine_.facts[n];
  const auto resolve = [&](const AssignedGpu& g) -> int {
    if (g.index >= 0 && static_cast<size_t>(g.index) < facts.size() &&
        facts[static_cast<size_t>(g.index)].uuid == g.uuid) {
      return g.index;
    }
    for (size_t i = 0; i < facts.size(); ++i) {
      if (facts[i].uuid == g.uuid) return static_cast<int>(i);
    }
    return -1;
  };
  // GPU index -> (milli, memory) the pod holds there.
  std::map<int, std::pair<int32_t, int64_t>> per_gpu;
  for (const ContainerAssignment& c : t.assignment.containers) {
    for (const AssignedGpu& g : c.gpus) {
      if (g.mig) continue;  // a MIG instance: counted by placement_mig.cc, not the engine
      const int i = resolve(g);
      if (i < 0) {
        VGPU_LOG_ERROR("pod %s/%s: GPU %s is not on node %s; its reservation is not counted",
                       t.ns.c_str(), t.name.c_str(), g.uuid.c_str(), t.node.c_str());
        ++conflicts_;
        return;
      }
      auto& [milli, mem] = per_gpu[i];
      if (t.assignment.source == AssignmentSource::kHami && !c.init) {
        milli += g.milli;
        mem += g.memory_mib;
      } else {
        milli = std::max(milli, g.milli);
        mem = std::max(mem, g.memory_mib);
      }
    }
  }
  if (per_gpu.empty()) return;
  std::vector<std::pair<sched::PodRequest, sched::GpuSet>> parts;
  if (t.assignment.source == AssignmentSource::kVgpu) {
    sched::PodRequest r;
    sched::GpuSet set = 0;
    for (const auto& [i, load] : per_gpu) {
      set |= sched::GpuSet{1} << i;
      r.gpu_milli = std::max(r.gpu_milli, load.first);
      r.gpu_memory_mib = std::max(r.gpu_memory_mib, load.second);
    }
    if (t.assignment.reserved_milli > 0) r.gpu_milli = t.assignment.reserved_milli;
    if (t.assignment.reserved_memory_mib > 0) r.gpu_memory_mib = t.assignment.reserved_memory_mib;
    r.num_gpus = sched::GpuCount(set);
    parts.emplace_back(r, set);
  } else {
    for (const auto& [i, load] : per_gpu) {
      sched::PodRequest r;
      r.num_gpus = 1;
      r.gpu_milli = std::clamp<int32_t>(load.first, 1, sched::kGpuMilli);
      r.gpu_memory_mib = load.second;
      parts.emplace_back(r, sched::GpuSet{1} << i);
    }
  }
  for (const auto& [r, set] : parts) {
    const sched::PodKey key = next_key_++;
    // Existing pods are counted whatever the policy's per-GPU pod limit; the units still apply
    // to new decisions through the constraint filter. Their CPU and memory count separately.
    Status s = engine_.cluster->Reserve(key, r, sched::Placement{n, set});
    if (!s.ok()) {
      VGPU_LOG_ERROR("pod %s/%s on %s cannot be counted: %s", t.ns.c_str(), t.name.c_str(),
                     t.node.c_str(), s.message().c_str());
      ++conflicts_;
      for (sched::PodKey k : t.keys) engine_.scheduler->Unreserve(k);
      t.keys.clear();
      return;
    }
    t.keys.push_back(key);
  }
}

void PlacementState::Unplace(Tracked& t) {
  if (t.Placed()) Changed();
  for (sched::PodKey k : t.keys) {
    if (engine_.scheduler) engine_.scheduler->Unreserve(k);
  }
  t.keys.clear();
  t.mig_placed = false;
  UnchargeHost(t);
}

void PlacementState::ChargeHost(Tracked& t, sched::NodeId n) {
  if (t.host.IsZero() || n >= engine_.host.size()) return;
  HostLoad& h = engine_.host[n];
  h.cpu_milli += t.host.cpu_milli;
  h.memory_mib += t.host.memory_mib;
  t.host_node = n;
  SyncHostReservation(n);
}

void PlacementState::UnchargeHost(Tracked& t) {
  if (t.host_node < 0) return;
  const auto n = static_cast<sched::NodeId>(t.host_node);
  t.host_node = -1;
  if (n >= engine_.host.size()) return;
  HostLoad& h = engine_.host[n];
  h.cpu_milli -= t.host.cpu_milli;
  h.memory_mib -= t.host.memory_mib;
  SyncHostReservation(n);
}

void PlacementState::SyncHostReservation(sched::NodeId n) {
  // One reservation per node holds the CPU and memory of all its pods, up to what the node has:
  // kubelet may run more than the allocatable (pods placed by others, a shrunk node), and the
  // GPUs of such a node must still be counted.
  HostLoad& h = engine_.host[n];
  sched::Cluster& c = *engine_.cluster;
  if (h.key != 0) c.Unreserve(h.key);
  h.key = 0;
  Changed();
  sched::PodRequest r;
  r.cpu_milli = std::clamp<int64_t>(h.cpu_milli, 0, c.cpu_free(n));
  r.memory_mib = std::clamp<int64_t>(h.memory_mib, 0, c.memory_free(n));
  if (r.cpu_milli == 0 && r.memory_mib == 0) return;
  const sched::PodKey key = next_key_++;
  if (c.Reserve(key, r, sched::Placement{n, 0}).ok()) h.key = key;
}

std::optional<AssumeTicket> PlacementState::Decide(const std::string& uid, const std::string& ns,
                                                   const std::string& name, const PodGpuRequest& r,
                                                   const Variant& v, sched::NodeId id, bool held) {
  ctx_.pod = &r;
  sched::PodRequest gpus_only = v.request;
  gpus_only.cpu_milli = gpus_only.memory_mib = 0;
  const bool host_fits = engine_.cluster->FitsHost(v.request, id);
  sched::GpuSet gpus =
      engine_.selector->SelectGpus(host_fits ? v.request : gpus_only, *engine_.cluster, id, rng_);
  // Multi-GPU pods: the set with the best predicted communication for the pod's pattern, and for
  // patterns whose rank order matters that order (placement_topology.h). The pattern was
  // validated when the request was parsed; one that does not fit this variant counts as
  // all-reduce.
  topo::CommPattern pattern;
  if (!r.comm_pattern.empty()) {
    auto parsed = topo::ParseCommPattern(r.comm_pattern, v.request.num_gpus);
    if (parsed) pattern = *parsed;
  }
  std::vector<int> order;
  // Among the GPUs the constraints allow (health, mode, units, UUIDs), as the policy's choice.
  const topo::GpuMask usable =
      v.request.num_gpus >= 2 ? ctx_.UsableMask(v.request, *engine_.cluster, id) : ~0u;
  gpus = TopologyGpuChoice(*engine_.topology[id], *engine_.cluster, id, v.request, gpus, pattern,
                           &order, usable);
  ctx_.pod = nullptr;
  if (sched::GpuCount(gpus) != v.request.num_gpus) return std::nullopt;
  const sched::PodKey key = next_key_++;
  // The GPUs here; the pod's CPU and memory go to the node's host reservation (ChargeHost).
  if (!engine_.scheduler->Reserve(key, gpus_only, sched::Placement{id, gpus}).ok()) {
    return std::nullopt;
  }
  Changed();
  Tracked t;
  t.ns = ns;
  t.name = name;
  t.assignment = BuildAssignment(r, v, id, gpus, order);
  t.host = r.host;
  t.node = t.assignment.node;
  t.in_flight = !held;
  t.held = held;
  t.generation = next_generation_++;
  t.deadline = options_.clock() + options_.assume_ttl;
  t.keys.push_back(key);
  AssumeTicket ticket{t.assignment, t.generation};
  auto [it, inserted] = pods_.insert_or_assign(uid, std::move(t));
  (void)inserted;
  ChargeHost(it->second, id);
  return ticket;
}

std::vector<PlacementState::Variant> PlacementState::Variants(const PodGpuRequest& r,
                                                              std::string* why_none) {
  std::vector<Variant> out;
  if (!r.HasGpus()) {
    Variant v;
    v.request.cpu_milli = r.host.cpu_milli;
    v.request.memory_mib = r.host.memory_mib;
    out.push_back(v);
    return out;
  }
  if (r.AsksMigProfile()) {  // MIG GPUs only (placement_mig.cc)
    if (why_none != nullptr) {
      *why_none = options_.request.names.MigPrefix() + r.containers.front().mig_profile +
                  " is served only by GPUs in mode mig or mig-dynamic; the node has none";
    }
    return out;
  }
  std::set<int64_t> capacities(engine_.model_capacity.begin(), engine_.model_capacity.end());
  bool any_model = false;
  std::string memory_reason;
  for (int64_t cap : capacities) {
    sched::ModelSet set;
    for (size_t m = 0; m < engine_.model_name.size(); ++m) {
      if (engine_.model_capacity[m] == cap && r.AllowsModel(engine_.model_name[m])) {
        set.Add(static_cast<sched::ModelId>(m));
      }
    }
    if (set.IsAny()) continue;
    any_model = true;
    auto shape = PodShapeOn(r, cap, options_.request);
    if (!shape) {
      memory_reason =
          shape.error().message() + "; the largest allowed GPU has " + std::to_string(cap) + " MiB";
      continue;
    }
    Variant v;
    v.capacity_mib = cap;
    v.request.cpu_milli = r.host.cpu_milli;
    v.request.memory_mib = r.host.memory_mib;
    v.request.num_gpus = shape->num_gpus;
    v.request.gpu_milli = shape->milli;
    v.request.gpu_memory_mib = shape->memory_mib;
    v.request.require_nvlink = r.require_nvlink;
    // Every model allowed: the any-model set, which the engine answers from node summaries.
    const uint64_t every = engine_.model_name.size() >= 64
                               ? ~uint64_t{0}
                               : (uint64_t{1} << engine_.model_name.size()) - 1;
    v.request.models = set.bits() == every ? sched::ModelSet() : set;
    out.push_back(v);
  }
  if (out.empty() && why_none != nullptr) {
    if (!any_model) {
      *why_none = "no GPU model in the cluster passes the pod's " +
                  options_.request.names.UseTypes() + " / " + options_.request.names.NoUseTypes() +
                  " annotations";
    } else {
      *why_none = memory_reason;
    }
  }
  return out;
}

bool PlacementState::CouldEverFit(const PodGpuRequest& req, const std::vector<Variant>& variants,
                                  sched::NodeId n) const {
  const auto gpus = engine_.cluster->gpus(n);
  for (const Variant& v : variants) {
    int usable = 0;
    topo::GpuMask mask = 0;  // the usable GPUs, for an NVLink requirement
    for (size_t i = 0; i < gpus.size(); ++i) {
      const GpuFacts& f = engine_.facts[n][i];
      if (!v.request.models.Allows(gpus[i].model) ||
          gpus[i].memory_capacity_mib < v.request.gpu_memory_mib) {
        continue;
      }
      if (!f.healthy || (req.HasUuidConstraints() && !req.AllowsUuid(f.uuid))) continue;
      ++usable;
      if (i < 32) mask |= topo::GpuMask{1} << i;
      if (!req.require_nvlink && usable >= v.request.num_gpus) return true;
    }
    if (req.require_nvlink && usable >= v.request.num_gpus &&
        topo::FindNvlinkSet(ctx_.NvlinkAdjacency(n), mask, v.request.num_gpus) != 0) {
      return true;
    }
  }
  return false;
}

std::string PlacementState::ReasonText(const std::vector<Variant>& variants, bool could) {
  const Variant& v = variants.front();
  const char* nvlink = v.request.require_nvlink ? " NVLink-connected" : "";
  const char* why = v.request.require_nvlink ? " (vgpu.io/topology: require-nvlink)" : "";
  char buf[320];
  if (!could) {
    std::snprintf(buf, sizeof buf,
                  "vgpu: node has fewer than %d%s healthy GPU(s) of an allowed model and UUID "
                  "with %lld MiB%s",
                  v.request.num_gpus, nvlink, static_cast<long long>(v.request.gpu_memory_mib),
                  why);
  } else {
    std::snprintf(buf, sizeof buf,
                  "vgpu: insufficient free GPU: needs %d%s GPU(s) with %d%% compute and %lld MiB "
                  "free each%s",
                  v.request.num_gpus, nvlink, v.request.gpu_milli / 10,
                  static_cast<long long>(v.request.gpu_memory_mib), why);
  }
  return buf;
}

PodAssignment PlacementState::BuildAssignment(const PodGpuRequest& req, const Variant& v,
                                              sched::NodeId node, sched::GpuSet gpus,
                                              const std::vector<int>& order) const {
  PodAssignment a;
  a.node = engine_.node_names[node];
  a.reserved_milli = v.request.gpu_milli;
  a.reserved_memory_mib = v.request.gpu_memory_mib;
  // Rank order when the pattern gives one (rank i is the i-th GPU of the pod, across its app
  // containers in spec order), else index order.
  const std::vector<int> indices = order.empty() ? sched::GpuIndices(gpus) : order;
  size_t next = 0;
  for (const ContainerGpuRequest& c : req.containers) {
    auto shape = ShapeOn(c, v.capacity_mib, options_.request);
    ContainerAssignment ca;
    ca.name = c.name;
    ca.init = c.init;
    ca.priority = c.priority;
    ca.rank_order = !order.empty();
    // App containers take consecutive distinct GPUs; init containers the first ones.
    size_t first = c.init ? 0 : next;
    if (!c.init) next += static_cast<size_t>(c.count);
    for (int k = 0; k < c.count && first + static_cast<size_t>(k) < indices.size(); ++k) {
      const int i = indices[first + static_cast<size_t>(k)];
      AssignedGpu g;
      g.index = i;
      g.uuid = engine_.facts[node][static_cast<size_t>(i)].uuid;
      g.milli = shape ? shape->milli : v.request.gpu_milli;
      g.memory_mib = shape ? shape->memory_mib : v.request.gpu_memory_mib;
      g.cores = shape ? shape->cores : 100;
      ca.gpus.push_back(std::move(g));
    }
    a.containers.push_back(std::move(ca));
  }
  return a;
}

std::vector<PlacementState::GpuUsage> PlacementState::Usage() {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  std::vector<GpuUsage> out;
  if (!engine_.cluster) return out;
  const sched::Cluster& c = *engine_.cluster;
  for (sched::NodeId n = 0; n < c.num_nodes(); ++n) {
    const auto gpus = c.gpus(n);
    for (size_t i = 0; i < gpus.size(); ++i) {
      GpuUsage u;
      u.node = c.name(n);
      u.index = static_cast<int>(i);
      u.uuid = engine_.facts[n][i].uuid;
      u.healthy = engine_.facts[n][i].healthy;
      u.model = engine_.model_name[gpus[i].model];
      u.memory_mib = gpus[i].memory_capacity_mib;
      u.memory_used_mib = gpus[i].memory_capacity_mib - gpus[i].memory_free_mib;
      u.milli_used = sched::kGpuMilli - gpus[i].free_milli;
      u.pods = gpus[i].pods;
      out.push_back(std::move(u));
    }
  }
  return out;
}

Status PlacementState::CheckConsistency() {
  std::lock_guard<std::mutex> lock(mu_);
  RebuildIfDirty();
  if (!engine_.cluster) return Status::Ok();
  const sched::Cluster& c = *engine_.cluster;
  std::map<std::pair<sched::NodeId, int>, std::pair<int64_t, int64_t>> load;  // milli, memory
  std::map<std::pair<sched::NodeId, int>, int> pods;
  for (const auto& [uid, t] : pods_) {
    for (sched::PodKey k : t.keys) {
      const sched::Cluster::Reservation* r = c.FindReservation(k);
      if (r == nullptr) return Status::Internal("pod " + t.name + " names a lost reservation");
      sched::ForEachGpu(r->placement.gpus, [&](int i) {
        auto& l = load[{r->placement.node, i}];
        l.first += r->request.gpu_milli;
        l.second += r->request.gpu_memory_mib;
        ++pods[{r->placement.node, i}];
      });
    }
  }
  for (const auto& [where, l] : load) {
    const sched::GpuState& g = c.gpus(where.first)[static_cast<size_t>(where.second)];
    const std::string name = c.name(where.first) + " GPU " + std::to_string(where.second);
    if (l.first > sched::kGpuMilli || l.second > g.memory_capacity_mib) {
      return Status::Internal(name + " is over-committed: " + std::to_string(l.first) + " milli, " +
                              std::to_string(l.second) + " MiB");
    }
    if (sched::kGpuMilli - g.free_milli != l.first || g.pods != pods[where]) {
      return Status::Internal(name + ": the engine disagrees with the tracked pods");
    }
  }
  std::vector<HostResources> host(c.num_nodes());
  for (const auto& [uid, t] : pods_) {
    if (t.host_node < 0) continue;
    host[static_cast<size_t>(t.host_node)].cpu_milli += t.host.cpu_milli;
    host[static_cast<size_t>(t.host_node)].memory_mib += t.host.memory_mib;
  }
  for (sched::NodeId n = 0; n < c.num_nodes(); ++n) {
    const HostLoad& h = engine_.host[n];
    if (h.cpu_milli != host[n].cpu_milli || h.memory_mib != host[n].memory_mib ||
        c.cpu_free(n) != c.cpu_capacity(n) - std::min(h.cpu_milli, c.cpu_capacity(n)) ||
        c.memory_free(n) != c.memory_capacity(n) - std::min(h.memory_mib, c.memory_capacity(n))) {
      return Status::Internal(c.name(n) + ": CPU or memory disagrees with the tracked pods");
    }
  }
  return CheckMigConsistency();
}

}  // namespace vgpu::k8s
