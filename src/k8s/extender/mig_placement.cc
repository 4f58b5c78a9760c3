#include "k8s/extender/mig_placement.h"

#include <algorithm>
#include <set>

namespace vgpu::k8s {
namespace {

struct Candidate {
  MigChoice choice;
  bool dynamic = false;
};

bool Better(const Candidate& a, const Candidate& b) {
  if (a.choice.instance_memory_mib != b.choice.instance_memory_mib) {
    return a.choice.instance_memory_mib < b.choice.instance_memory_mib;
  }
  if (a.dynamic != b.dynamic) return !a.dynamic;
  if (a.choice.score != b.choice.score) return a.choice.score > b.choice.score;
  return a.choice.gpu_index < b.choice.gpu_index;
}

void Limits(const MigRequest& r, int64_t instance_mib, MigChoice* c) {
  c->instance_memory_mib = instance_mib;
  c->memory_mib = r.memory_mib && *r.memory_mib < instance_mib ? *r.memory_mib : instance_mib;
  c->cores = r.cores ? std::clamp(*r.cores, 1, 100) : 100;
}

// The assignments' MIG entries on GPU `uuid`.
std::vector<AssignedMig> AssignedOn(const std::vector<PodAssignment>& on_node,
                                    const std::string& uuid) {
  std::vector<AssignedMig> out;
  for (const PodAssignment& a : on_node) {
    for (const ContainerAssignment& c : a.containers) {
      for (const AssignedGpu& g : c.gpus) {
        if (g.uuid == uuid && g.mig) out.push_back(*g.mig);
      }
    }
  }
  return out;
}

// A mig-dynamic GPU's layout: its instances plus those assigned but not yet reported.
mig::Layout DynamicLayout(const InventoryGpu& g, const mig::ModelTable* table,
                          const std::vector<PodAssignment>& on_node) {
  mig::Layout layout{table, {}};
  std::set<int> starts;
  auto add = [&](const std::string& profile, int start) {
    const int q = table->IndexOf(profile);
    if (q >= 0 && starts.insert(start).second) (void)mig::Add(&layout, {q, start});
  };
  for (const InventoryMigInstance& inst : g.mig) add(inst.profile, inst.start);
  for (const AssignedMig& m : AssignedOn(on_node, g.uuid)) add(m.profile, m.start);
  return layout;
}

// The mix of the instances on the node's mig-dynamic GPUs of `table` (mig::MixOfInstances).
mig::RequestMix NodeMix(const NodeInventory& node, const mig::ModelTable* table,
                        const std::vector<PodAssignment>& on_node) {
  std::vector<mig::Layout> layouts;
  for (const InventoryGpu& g : node.gpus) {
    if (g.mode == GpuMode::kMigDynamic && MigModelOf(g).table == table) {
      layouts.push_back(DynamicLayout(g, table, on_node));
    }
  }
  return mig::MixOfInstances(*table, layouts);
}

}  // namespace

bool AssignmentHasMig(const PodAssignment& a) {
  for (const ContainerAssignment& c : a.containers) {
    for (const AssignedGpu& g : c.gpus) {
      if (g.mig) return true;
    }
  }
  return false;
}

std::optional<std::string> MigProfileOfResource(std::string_view resource) {
  if (!resource.starts_with(mig::kMigResourcePrefix)) return std::nullopt;
  std::string_view p = resource.substr(mig::kMigResourcePrefix.size());
  if (p.empty()) return std::nullopt;
  return std::string(p);
}

Result<MigChoice> ChooseMig(const NodeInventory& node, const std::vector<PodAssignment>& on_node,
                            const MigRequest& request, const PodGpuRequest* pod,
                            const mig::RequestMix* mix) {
  if (request.profile.empty() && (!request.memory_mib || *request.memory_mib <= 0)) {
    return Status::InvalidArgument("a MIG request needs a profile or a memory size");
  }
  std::optional<Candidate> best;
  std::string why;
  const auto note = [&](const std::string& s) {
    if (why.empty()) why = s;
  };
  for (const InventoryGpu& g : node.gpus) {
    if (g.mode != GpuMode::kMig && g.mode != GpuMode::kMigDynamic) continue;
    const std::string where = "GPU " + std::to_string(g.index);
    if (!g.healthy) {
      note(where + " is unhealthy");
      continue;
    }
    if (pod && (!pod->AllowsModel(g.model) || !pod->AllowsUuid(g.uuid))) {
      note(where + " is excluded by the pod's GPU type or UUID annotations");
      continue;
    }
    const mig::ModelMatch model = MigModelOf(g);
    const mig::ModelTable* table = model.table;
    const std::vector<AssignedMig> assigned = AssignedOn(on_node, g.uuid);
    if (g.mode == GpuMode::kMig) {
      std::set<std::string> used;
      for (const AssignedMig& m : assigned) used.insert(m.uuid);
      bool found = false;
      for (const InventoryMigInstance& inst : g.mig) {
        if (used.count(inst.uuid)) continue;
        const mig::Profile* p = table ? table->Find(inst.profile) : nullptr;
        int64_t mib = p ? p->memory_mib : 0;
        if (!request.profile.empty()) {
          const mig::Profile* want = table ? table->Find(request.profile) : nullptr;
          if (want ? want != p : inst.profile != request.profile) continue;
        } else if (!p || mib < *request.memory_mib) {
          continue;
        }
        Candidate c;
        c.choice.gpu_index = g.index;
        c.choice.gpu_uuid = g.uuid;
        c.choice.mode = g.mode;
        c.choice.mig = {inst.profile, inst.start, inst.uuid};
        Limits(request, mib, &c.choice);
        if (request.memory_mib && *request.memory_mib > mib && mib > 0) continue;
        found = true;
        if (!best || Better(c, *best)) best = c;
      }
      if (!found) {
        note(request.profile.empty() ? where + ": no free MIG instance with >= " +
                                           std::to_string(*request.memory_mib) + " MiB"
                                     : where + ": no free " + request.profile + " instance");
      }
      continue;
    }
    // mig-dynamic.
    if (table == nullptr) {
      note(where + ": " + model.why);
      continue;
    }
    const mig::Layout layout = DynamicLayout(g, table, on_node);
    std::vector<int> profiles;
    if (!request.profile.empty()) {
      const int q = table->IndexOf(request.profile);
      if (q < 0) {
        return Status::InvalidArgument(std::string(table->key) + " has no MIG profile " +
                                       request.profile);
      }
      profiles.push_back(q);
    } else {
      profiles = table->Fitting(*request.memory_mib);
    }
    const mig::RequestMix m =
        mix && mix->size() == table->profiles.size() ? *mix : NodeMix(node, table, on_node);
    bool placed = false;
    for (int q : profiles) {
      const std::optional<int> start =
          mig::ChooseStart(layout, q, mig::PlacementRule::kFragmentationAware, &m);
      if (!start) continue;
      const mig::Profile& p = table->profiles[q];
      Candidate c;
      c.dynamic = true;
      c.choice.gpu_index = g.index;
      c.choice.gpu_uuid = g.uuid;
      c.choice.mode = g.mode;
      c.choice.mig = {std::string(p.name), *start, ""};
      Limits(request, p.memory_mib, &c.choice);
      mig::Layout after = layout;
      (void)mig::Add(&after, {q, *start});
      c.choice.score = mig::ScoreLayout(after, m);
      if (!best || Better(c, *best)) best = c;
      placed = true;
      break;  // the smallest fitting profile, as HAMi
    }
    if (!placed) {
      note(where + ": " +
           (profiles.empty() ? "no MIG profile of " + std::string(table->key) + " has >= " +
                                   std::to_string(request.memory_mib.value_or(0)) + " MiB"
                             : "no fitting MIG profile has a free placement (layout " +
                                   (layout.instances.empty() ? std::string("empty")
                                                             : mig::FormatLayout(layout)) +
                                   ")"));
    }
  }
  if (best) return best->choice;
  return Status::ResourceExhausted(why.empty() ? "no MIG GPU on the node" : why);
}

}  // namespace vgpu::k8s
