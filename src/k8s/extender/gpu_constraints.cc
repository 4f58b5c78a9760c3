#include "k8s/extender/gpu_constraints.h"

#include <algorithm>

#include "topo/nvlink_sets.h"

namespace vgpu::k8s {

bool ConstraintContext::GpuUsable(const sched::PodRequest& r, const sched::Cluster& c,
                                  sched::NodeId n, int i) const {
  const auto gpus_of_node = c.gpus(n);
  if (i < 0 || static_cast<size_t>(i) >= gpus_of_node.size()) return false;
  const sched::GpuState& g = gpus_of_node[static_cast<size_t>(i)];
  if (!sched::Cluster::GpuFits(r, g, fit)) return false;
  if (gpus == nullptr || n >= gpus->size()) return true;
  const std::vector<GpuFacts>& facts = (*gpus)[n];
  if (static_cast<size_t>(i) >= facts.size()) return true;
  const GpuFacts& f = facts[static_cast<size_t>(i)];
  if (!f.healthy || g.pods >= f.units) return false;
  switch (f.mode) {
    case GpuMode::kShared:
      break;
    case GpuMode::kWhole:
      if (g.pods >= 1) return false;
      break;
    case GpuMode::kMig:
    case GpuMode::kMigDynamic:
      return false;
    case GpuMode::kMps:
      if (pod == nullptr || !pod->allow_shared_fault_domain) return false;
      break;
  }
  return pod == nullptr || !pod->HasUuidConstraints() || pod->AllowsUuid(f.uuid);
}

uint32_t ConstraintContext::UsableMask(const sched::PodRequest& r, const sched::Cluster& c,
                                       sched::NodeId n) const {
  uint32_t mask = 0;
  for (int i = 0; i < c.num_gpus(n) && i < 32; ++i) {
    if (GpuUsable(r, c, n, i)) mask |= uint32_t{1} << i;
  }
  return mask;
}

std::vector<uint32_t> ConstraintContext::NvlinkAdjacency(sched::NodeId n) const {
  std::vector<uint32_t> adj;
  if (gpus == nullptr || n >= gpus->size()) return adj;
  for (const GpuFacts& f : (*gpus)[n]) adj.push_back(f.nvlink);
  return adj;
}

bool ConstraintFilter::Filter(const sched::PodRequest& r, const sched::Cluster& c,
                              sched::NodeId n) const {
  if (r.num_gpus == 0) return true;
  if (r.require_nvlink) {
    return topo::FindNvlinkSet(ctx_->NvlinkAdjacency(n), ctx_->UsableMask(r, c, n), r.num_gpus) !=
           0;
  }
  int need = r.num_gpus;
  const int count = c.num_gpus(n);
  for (int i = 0; i < count; ++i) {
    if (ctx_->GpuUsable(r, c, n, i) && --need == 0) return true;
  }
  return false;
}

sched::GpuSet ConstrainedSelector::SelectGpus(const sched::PodRequest& r, const sched::Cluster& c,
                                              sched::NodeId n, Rng& rng) {
  if (r.num_gpus == 0) return 0;
  const sched::GpuSet chosen = inner_->SelectGpus(r, c, n, rng);
  bool ok = sched::GpuCount(chosen) == r.num_gpus;
  sched::ForEachGpu(chosen, [&](int i) { ok = ok && ctx_->GpuUsable(r, c, n, i); });
  if (ok) return chosen;
  std::vector<int> usable;
  for (int i = 0; i < c.num_gpus(n); ++i) {
    if (ctx_->GpuUsable(r, c, n, i)) usable.push_back(i);
  }
  if (static_cast<int>(usable.size()) < r.num_gpus) return 0;
  const auto gpus = c.gpus(n);
  std::stable_sort(usable.begin(), usable.end(), [&](int a, int b) {
    return gpus[static_cast<size_t>(a)].free_milli < gpus[static_cast<size_t>(b)].free_milli;
  });
  sched::GpuSet out = 0;
  for (int k = 0; k < r.num_gpus; ++k) out |= sched::GpuSet{1} << usable[static_cast<size_t>(k)];
  return out;
}

}  // namespace vgpu::k8s
