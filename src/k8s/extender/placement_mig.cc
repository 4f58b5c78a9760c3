// PlacementState's MIG side (the contract is in placement_state.h): which pods a MIG instance
// serves, the filter's verdicts and the ranking of MIG-served nodes, Assume by an instance, and
// the check that no instance is given twice. The choice itself is ChooseMig (mig_placement.h).
#include <algorithm>
#include <map>
#include <set>

#include "k8s/extender/placement_state.h"
#include "mig/layout.h"
#include "mig/profiles.h"

namespace vgpu::k8s {
namespace {

// What a pod asks of a MIG instance: a profile by name, or (one GPU with a memory size, HAMi's
// nvidia.com/gpu + gpumem [+ gpucores]) the smallest instance that holds it.
std::optional<MigRequest> MigRequestOf(const PodGpuRequest& r) {
  if (r.containers.size() != 1) return std::nullopt;
  const ContainerGpuRequest& c = r.containers.front();
  if (c.count != 1) return std::nullopt;
  if (c.mig_profile.empty() && !c.memory_mib) return std::nullopt;
  return MigRequest{c.mig_profile, c.memory_mib, c.cores};
}

// The inventory with no instance created on demand: what a mig-dynamic GPU could hold were it
// empty (a static layout keeps its instances).
NodeInventory WithoutDynamicInstances(NodeInventory inv) {
  for (InventoryGpu& g : inv.gpus) {
    if (g.mode == GpuMode::kMigDynamic) g.mig.clear();
  }
  return inv;
}

// One scale for MIG-served nodes, higher is better: the least instance memory (least waste),
// then the largest profile kept placeable, then the chance the next request fits, then how many
// more instances fit.
int64_t MigRaw(const MigChoice& c) {
  const int64_t further = std::clamp<int64_t>(static_cast<int64_t>(c.score.further), 0, 31);
  const int64_t next = std::clamp<int64_t>(static_cast<int64_t>(c.score.next_fit * 1000), 0, 1023);
  return -c.instance_memory_mib * (int64_t{1} << 20) +
         int64_t{c.score.largest_slices} * (int64_t{1} << 16) + next * 32 + further;
}

}  // namespace

bool PlacementState::HasMigGpus(sched::NodeId n) const {
  if (n >= engine_.facts.size()) return false;
  return std::any_of(engine_.facts[n].begin(), engine_.facts[n].end(), [](const GpuFacts& f) {
    return f.mode == GpuMode::kMig || f.mode == GpuMode::kMigDynamic;
  });
}

Result<MigChoice> PlacementState::MigChoiceOn(const PodGpuRequest& r, sched::NodeId n) const {
  auto req = MigRequestOf(r);
  if (!req) return Status::InvalidArgument("the pod does not ask for one GPU with a memory size");
  const std::string& name = engine_.node_names[n];
  auto node = nodes_.find(name);
  if (node == nodes_.end()) return Status::NotFound("node " + name + " is not known");
  std::vector<PodAssignment> on_node;
  for (const auto& [uid, t] : pods_) {
    if (t.mig_placed && t.node == name) on_node.push_back(t.assignment);
  }
  return ChooseMig(node->second.inventory, on_node, *req, &r);
}

void PlacementState::ResolveMig(Memo& m, const PodGpuRequest& r,
                                const std::vector<sched::NodeId>& todo) {
  auto req = MigRequestOf(r);
  if (!req) return;
  const sched::Cluster& c = *engine_.cluster;
  sched::PodRequest host;
  host.cpu_milli = r.host.cpu_milli;
  host.memory_mib = r.host.memory_mib;
  for (sched::NodeId id : todo) {
    if (m.state[id] == Memo::kFits || !HasMigGpus(id)) continue;
    auto choice = MigChoiceOn(r, id);
    if (choice) {
      if (!c.FitsHost(host, id)) {
        const bool ever =
            c.cpu_capacity(id) < r.host.cpu_milli || c.memory_capacity(id) < r.host.memory_mib;
        m.state[id] = ever ? Memo::kHostNever : Memo::kHost;
        continue;
      }
      m.state[id] = Memo::kFits;
      m.mig[id] = 1;
      m.mig_raw[id] = MigRaw(*choice);
      continue;
    }
    m.mig_why[id] = choice.error().message();
    if (m.state[id] == Memo::kNever) {
      // Preemption might help when the node's MIG GPUs, free of tracked pods, would hold it.
      const NodeInventory empty =
          WithoutDynamicInstances(nodes_.at(engine_.node_names[id]).inventory);
      m.state[id] = ChooseMig(empty, {}, *req, &r) ? Memo::kCould : Memo::kNever;
    }
  }
}

void PlacementState::RankMig(Memo& m, const std::vector<sched::NodeId>& ids) {
  bool any_slice = false, any_mig = false;
  int64_t slice_lo = 0, mig_hi = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (m.mig[ids[k]] != 0) {
      mig_hi = any_mig ? std::max(mig_hi, m.mig_raw[ids[k]]) : m.mig_raw[ids[k]];
      any_mig = true;
    } else if (m.feasible[k] != 0) {
      slice_lo = any_slice ? std::min(slice_lo, m.raw[k]) : m.raw[k];
      any_slice = true;
    }
  }
  if (!any_mig) return;
  // Below every node a software slice fits, in the MIG order among themselves.
  const int64_t shift = any_slice ? slice_lo - 1 - mig_hi : 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (m.mig[ids[k]] == 0) continue;
    m.feasible[k] = 1;
    m.variant[k] = -1;  // no engine memory class: no filter hold
    m.raw[k] = m.mig_raw[ids[k]] + shift;
  }
}

void PlacementState::MigReasons(const Memo& m, const std::vector<sched::NodeId>& ids,
                                NodeVerdicts* out) const {
  std::map<std::string, uint8_t> index;
  for (size_t i = 0; i < out->kind.size(); ++i) {
    if (out->kind[i] != NodeVerdicts::kFailed && out->kind[i] != NodeVerdicts::kUnresolvable) {
      continue;
    }
    const uint8_t base = out->reason[i];
    if (base != kCould && base != kNever && base != kNoVariant) continue;
    const std::string& why = m.mig_why[ids[i]];
    if (why.empty()) continue;
    // The software-slice reason only where a software slice could go.
    const bool slices = std::any_of(
        engine_.facts[ids[i]].begin(), engine_.facts[ids[i]].end(), [](const GpuFacts& f) {
          return f.mode != GpuMode::kMig && f.mode != GpuMode::kMigDynamic;
        });
    const std::string text =
        (m.variants.empty() || !slices ? std::string("vgpu: ") : out->reasons[base] + "; ") +
        "MIG: " + why;
    auto it = index.find(text);
    if (it == index.end()) {
      if (out->reasons.size() >= 255) continue;  // keep the general reason
      it = index.emplace(text, static_cast<uint8_t>(out->reasons.size())).first;
      out->reasons.push_back(text);
    }
    out->reason[i] = it->second;
  }
}

Result<AssumeTicket> PlacementState::AssumeMig(const std::string& uid, const std::string& ns,
                                               const std::string& name, const PodGpuRequest& r,
                                               sched::NodeId n) {
  const std::string& node = engine_.node_names[n];
  if (!HasMigGpus(n)) {
    return Status::ResourceExhausted("node " + node + " has no MIG GPU for pod " + ns + "/" + name);
  }
  auto choice = MigChoiceOn(r, n);
  if (!choice) {
    return Status::ResourceExhausted("node " + node + " has no room for pod " + ns + "/" + name +
                                     ": MIG: " + choice.error().message());
  }
  const ContainerGpuRequest& c = r.containers.front();
  Tracked t;
  t.ns = ns;
  t.name = name;
  t.assignment.node = node;
  t.assignment.reserved_milli = choice->cores * 10;
  t.assignment.reserved_memory_mib = choice->memory_mib;
  ContainerAssignment ca;
  ca.name = c.name;
  ca.init = c.init;
  ca.priority = c.priority;
  AssignedGpu g;
  g.uuid = choice->gpu_uuid;
  g.index = choice->gpu_index;
  g.milli = choice->cores * 10;
  g.memory_mib = choice->memory_mib;
  g.cores = choice->cores;
  g.mig = choice->mig;
  ca.gpus.push_back(std::move(g));
  t.assignment.containers.push_back(std::move(ca));
  t.host = r.host;
  t.node = node;
  t.in_flight = true;
  t.generation = next_generation_++;
  t.deadline = options_.clock() + options_.assume_ttl;
  AssumeTicket ticket{t.assignment, t.generation};
  Track(uid, std::move(t));
  return ticket;
}

Status PlacementState::CheckMigConsistency() const {
  // Per (node, GPU): static instances by UUID at most once; on-demand placements never overlap
  // (pods naming the same profile and start share that instance).
  std::map<std::pair<std::string, std::string>, std::map<int, std::string>> dynamic;
  std::set<std::pair<std::string, std::string>> static_used;
  for (const auto& [uid, t] : pods_) {
    if (!t.mig_placed) continue;
    for (const ContainerAssignment& c : t.assignment.containers) {
      for (const AssignedGpu& g : c.gpus) {
        if (!g.mig) continue;
        const std::string where = t.node + " GPU " + g.uuid;
        if (!g.mig->uuid.empty()) {
          if (!static_used.insert({t.node, g.mig->uuid}).second) {
            return Status::Internal(where + ": MIG instance " + g.mig->uuid + " is given twice");
          }
          continue;
        }
        auto& starts = dynamic[{t.node, g.uuid}];
        auto [it, inserted] = starts.emplace(g.mig->start, g.mig->profile);
        if (!inserted && it->second != g.mig->profile) {
          return Status::Internal(where + ": two MIG profiles at start " +
                                  std::to_string(g.mig->start));
        }
      }
    }
  }
  for (const auto& [where, starts] : dynamic) {
    auto node = nodes_.find(where.first);
    if (node == nodes_.end()) continue;
    const mig::ModelTable* table = nullptr;
    for (const InventoryGpu& g : node->second.inventory.gpus) {
      if (g.uuid == where.second) table = MigModelOf(g).table;
    }
    if (table == nullptr) continue;
    mig::Layout layout{table, {}};
    for (const auto& [start, profile] : starts) {
      const int q = table->IndexOf(profile);
      if (q < 0 || !mig::Add(&layout, {q, start}).ok()) {
        return Status::Internal(where.first + " GPU " + where.second + ": MIG placement " +
                                profile + "@" + std::to_string(start) +
                                " overlaps another or breaks the GPU's limits");
      }
    }
  }
  return Status::Ok();
}

}  // namespace vgpu::k8s
