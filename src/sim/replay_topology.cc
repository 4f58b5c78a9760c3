#include "sim/replay_topology.h"

#include <algorithm>

#include "topo/besteffort.h"
#include "topo/choose.h"
#include "topo/nvlink_sets.h"
#include "topo/presets.h"

namespace vgpu::sim {

std::string_view GpuChoiceName(GpuChoice c) {
  switch (c) {
    case GpuChoice::kPolicy:
      return "policy";
    case GpuChoice::kVgpu:
      return "vgpu";
    case GpuChoice::kLowestIndex:
      return "lowest-index";
    case GpuChoice::kBestEffort:
      return "besteffort";
  }
  return "?";
}

Result<GpuChoice> ParseGpuChoice(std::string_view name) {
  for (GpuChoice c :
       {GpuChoice::kPolicy, GpuChoice::kVgpu, GpuChoice::kLowestIndex, GpuChoice::kBestEffort}) {
    if (name == GpuChoiceName(c)) return c;
  }
  return Status::InvalidArgument("unknown GPU choice '" + std::string(name) +
                                 "' (known: vgpu, lowest-index, besteffort, policy)");
}

Status CheckTopologyModel(const TopologyModel& m) {
  for (const std::string& s : m.shapes) {
    std::optional<topo::Topology> t = topo::Preset(s);
    if (!t) {
      std::string names;
      for (const std::string& n : topo::PresetNames()) names += (names.empty() ? "" : ", ") + n;
      return Status::InvalidArgument("unknown server shape '" + s + "' (presets: " + names + ")");
    }
    if (t->size() > 16) {
      return Status::InvalidArgument("server shape '" + s + "' has more than 16 GPUs");
    }
  }
  if (!(m.comm_share >= 0 && m.comm_share < 1)) {
    return Status::InvalidArgument("the communication share must be in [0, 1), got " +
                                   std::to_string(m.comm_share));
  }
  return Status::Ok();
}

Result<std::unique_ptr<TopologyPlacer>> TopologyPlacer::Create(const sched::Cluster& cluster,
                                                               const TopologyModel& model) {
  VGPU_RETURN_IF_ERROR(CheckTopologyModel(model));
  auto p = std::make_unique<TopologyPlacer>();
  p->model_ = model;
  std::vector<std::string> names;  // distinct, in list order
  for (const std::string& s : model.shapes) {
    if (std::find(names.begin(), names.end(), s) == names.end()) names.push_back(s);
  }
  for (const std::string& s : names) {
    auto ev = std::make_unique<topo::Evaluator>(*topo::Preset(s));
    std::vector<double> best(static_cast<size_t>(ev->size()) + 1, 0.0);
    const topo::GpuMask all = (topo::GpuMask{1} << ev->size()) - 1;
    for (int k = 2; k <= ev->size(); ++k) best[k] = topo::BestBusBandwidth(*ev, all, k);
    p->best_.push_back(std::move(best));
    p->nvlink_.push_back(topo::NvlinkAdjacency(ev->topology()));
    p->shapes_.push_back(std::move(ev));
  }
  std::vector<int> seen_of_size(65, 0);  // nodes of each GPU count met so far
  for (sched::NodeId n = 0; n < cluster.num_nodes(); ++n) {
    const int g = cluster.num_gpus(n);
    std::vector<int> fitting;  // list positions of the presets with g GPUs
    for (size_t i = 0; i < model.shapes.size(); ++i) {
      const size_t shape = std::find(names.begin(), names.end(), model.shapes[i]) - names.begin();
      if (p->shapes_[shape]->size() == g) fitting.push_back(static_cast<int>(shape));
    }
    int shape = -1;
    if (!fitting.empty() && g > 0 && g < 65) {
      shape = fitting[static_cast<size_t>(seen_of_size[g]++) % fitting.size()];
    }
    p->shape_of_.push_back(shape);
  }
  return p;
}

sched::GpuSet TopologyPlacer::Choose(const sched::Cluster& cluster, sched::NodeId node,
                                     const sched::PodRequest& r, sched::GpuSet policy_gpus,
                                     double* run_factor, double* bandwidth_ratio) {
  *run_factor = 1.0;
  *bandwidth_ratio = 1.0;
  if (r.num_gpus < 2 || !Shaped(node)) return policy_gpus;
  const int shape = shape_of_[node];
  topo::Evaluator& ev = *shapes_[static_cast<size_t>(shape)];
  std::vector<int> fit;
  topo::GpuMask fit_mask = 0;
  auto gpus = cluster.gpus(node);
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (sched::Cluster::GpuFits(r, gpus[i], sched::FitOptions{})) {
      fit.push_back(static_cast<int>(i));
      fit_mask |= topo::GpuMask{1} << i;
    }
  }
  sched::GpuSet chosen = policy_gpus;
  std::vector<int> set;
  if (static_cast<int>(fit.size()) >= r.num_gpus) {
    switch (model_.choice) {
      case GpuChoice::kPolicy:
        break;
      case GpuChoice::kVgpu:
        set = topo::ChooseSet(ev, fit_mask, r.num_gpus).gpus;
        break;
      case GpuChoice::kLowestIndex:
        set = topo::LowestIndexAllocate(fit, r.num_gpus);
        break;
      case GpuChoice::kBestEffort:
        set = topo::BestEffortAllocate(ev.topology(), fit, {}, r.num_gpus);
        break;
    }
  }
  if (static_cast<int>(set.size()) == r.num_gpus) {
    chosen = 0;
    for (int g : set) chosen |= sched::GpuSet{1} << g;
  }
  // The requirement wins over the choice rule (NvlinkFilter let the pod here: a set exists).
  const std::vector<topo::GpuMask>& nvlink = nvlink_[static_cast<size_t>(shape)];
  if (r.require_nvlink && !topo::NvlinkConnected(nvlink, static_cast<topo::GpuMask>(chosen))) {
    topo::ChooseOptions options;
    options.require_nvlink = true;
    const std::vector<int> connected = topo::ChooseSet(ev, fit_mask, r.num_gpus, {}, options).gpus;
    if (static_cast<int>(connected.size()) == r.num_gpus) {
      chosen = 0;
      for (int g : connected) chosen |= sched::GpuSet{1} << g;
    }
  }
  const double best = best_[static_cast<size_t>(shape)][static_cast<size_t>(r.num_gpus)];
  topo::GpuMask mask = 0;
  for (int g : sched::GpuIndices(chosen)) mask |= topo::GpuMask{1} << g;
  const double bw = ev.RingBusBandwidth(mask);
  if (best > 0 && bw > 0) {
    *bandwidth_ratio = bw / best;
    *run_factor = (1.0 - model_.comm_share) + model_.comm_share * best / bw;
  }
  return chosen;
}

bool TopologyPlacer::HasNvlinkSet(const sched::Cluster& cluster, sched::NodeId node,
                                  const sched::PodRequest& r) const {
  if (!Shaped(node)) return false;
  topo::GpuMask fit = 0;
  auto gpus = cluster.gpus(node);
  for (size_t i = 0; i < gpus.size() && i < 32; ++i) {
    if (sched::Cluster::GpuFits(r, gpus[i], sched::FitOptions{})) fit |= topo::GpuMask{1} << i;
  }
  return topo::FindNvlinkSet(nvlink_[static_cast<size_t>(shape_of_[node])], fit, r.num_gpus) != 0;
}

bool NvlinkFilter::Filter(const sched::PodRequest& r, const sched::Cluster& c,
                          sched::NodeId n) const {
  if (!r.require_nvlink || r.num_gpus < 2) return true;
  return placer_ != nullptr && placer_->HasNvlinkSet(c, n, r);
}

}  // namespace vgpu::sim
