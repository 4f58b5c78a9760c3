#include "k8s/extender/placement_topology.h"

#include <algorithm>

#include "topo/choose.h"
#include "topo/nvlink_sets.h"

namespace vgpu::k8s {
namespace {

bool ParseToken(const std::string& s, topo::PairLink* link) {
  if (s.size() > 2 && s[0] == 'N' && s[1] == 'V') {
    int n = 0;
    for (size_t i = 2; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9' || n > 1000) return false;
      n = n * 10 + (s[i] - '0');
    }
    link->nvlinks = n;
    return n > 0;
  }
  return topo::ParsePcieLevelToken(s, &link->pcie);
}

topo::GpuMask FittingGpus(const sched::Cluster& c, sched::NodeId n, const sched::PodRequest& r) {
  topo::GpuMask mask = 0;
  auto gpus = c.gpus(n);
  for (size_t i = 0; i < gpus.size() && i < 32; ++i) {
    if (sched::Cluster::GpuFits(r, gpus[i], sched::FitOptions{})) mask |= topo::GpuMask{1} << i;
  }
  return mask;
}

}  // namespace

topo::Topology TopologyOfInventory(const NodeInventory& inv) {
  int n = static_cast<int>(inv.gpus.size());
  topo::Topology t(n);
  bool rows = n > 0;
  for (const InventoryGpu& g : inv.gpus) {
    auto it = inv.links.find(g.index);
    rows = rows && it != inv.links.end() && static_cast<int>(it->second.size()) == n;
  }
  std::vector<int> nv_sum(n, 0);
  for (int a = 0; a < n; ++a) {
    t.MutableGpu(a).numa_node = inv.gpus[a].numa;
    for (int b = a + 1; b < n; ++b) {
      topo::PairLink l;
      const InventoryGpu& ga = inv.gpus[a];
      const InventoryGpu& gb = inv.gpus[b];
      l.pcie =
          ga.numa >= 0 && ga.numa == gb.numa ? topo::PcieLevel::kNode : topo::PcieLevel::kSystem;
      topo::PairLink parsed = l;
      if (rows && ParseToken(inv.links.at(ga.index)[b], &parsed)) {
        l = parsed;
        l.pcie_inferred = l.nvlinks > 0;
        if (l.nvlinks > 0) l.pcie = parsed.pcie;
      } else if (std::find(ga.nvlink_peers.begin(), ga.nvlink_peers.end(), gb.uuid) !=
                 ga.nvlink_peers.end()) {
        l.nvlinks = 1;
        l.pcie_inferred = true;
      }
      nv_sum[a] += l.nvlinks;
      nv_sum[b] += l.nvlinks;
      t.SetLink(a, b, l);
    }
  }
  if (inv.pcie_generation > 0) {
    t.pcie_generation = inv.pcie_generation;
    t.pcie_width = inv.pcie_width > 0 ? inv.pcie_width : 16;
    t.pcie_from_driver = true;
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      topo::PairLink l = t.Link(a, b);
      if (l.nvlinks > 0 && nv_sum[a] > topo::kMaxNvLinksPerGpu &&
          nv_sum[b] > topo::kMaxNvLinksPerGpu) {
        l.via_nvswitch = true;
        t.SetLink(a, b, l);
      }
    }
  }
  return t;
}

sched::GpuSet TopologyGpuChoice(topo::Evaluator& ev, const sched::Cluster& c, sched::NodeId n,
                                const sched::PodRequest& r, sched::GpuSet fallback,
                                const topo::CommPattern& pattern, std::vector<int>* order,
                                topo::GpuMask usable) {
  if (order != nullptr) order->clear();
  const bool exact_size = ev.size() == c.num_gpus(n) && ev.size() <= 16;
  if (r.num_gpus < 2 || !exact_size) {
    if (r.require_nvlink && r.num_gpus >= 2 &&
        !(exact_size && topo::NvlinkConnected(topo::NvlinkAdjacency(ev.topology()),
                                              static_cast<topo::GpuMask>(fallback)))) {
      return 0;
    }
    return fallback;
  }
  topo::GpuMask fit = FittingGpus(c, n, r) & usable;
  topo::ChooseOptions options;
  options.require_nvlink = r.require_nvlink;
  topo::SetChoice choice = topo::ChooseSet(ev, fit, r.num_gpus, pattern, options);
  if (static_cast<int>(choice.gpus.size()) != r.num_gpus) return r.require_nvlink ? 0 : fallback;
  sched::GpuSet set = 0;
  for (int g : choice.gpus) set |= sched::GpuSet{1} << g;
  if (order != nullptr && pattern.OrderMatters()) *order = choice.gpus;
  return set;
}

double BestSetBandwidth(topo::Evaluator& ev, const sched::Cluster& c, sched::NodeId n,
                        const sched::PodRequest& r) {
  if (r.num_gpus < 2 || ev.size() != c.num_gpus(n) || ev.size() > 16) return 0;
  return topo::BestBusBandwidth(ev, FittingGpus(c, n, r), r.num_gpus);
}

void RankByTopology(std::vector<int64_t>* raw, std::span<const uint8_t> feasible,
                    std::span<const double> bandwidth) {
  std::vector<double> levels;
  int64_t lo = 0, hi = 0;
  bool any = false;
  for (size_t k = 0; k < raw->size(); ++k) {
    if (!feasible[k]) continue;
    levels.push_back(bandwidth[k]);
    lo = any ? std::min(lo, (*raw)[k]) : (*raw)[k];
    hi = any ? std::max(hi, (*raw)[k]) : (*raw)[k];
    any = true;
  }
  if (!any) return;
  std::sort(levels.begin(), levels.end(), std::greater<>());
  // Merge levels within 1% of the level above.
  std::vector<double> merged;
  for (double b : levels) {
    if (merged.empty() || b < merged.back() * 0.99) merged.push_back(b);
  }
  if (merged.size() < 2) return;
  const int64_t span = hi - lo + 1;
  for (size_t k = 0; k < raw->size(); ++k) {
    if (!feasible[k]) continue;
    int64_t level = 0;
    while (level + 1 < static_cast<int64_t>(merged.size()) && bandwidth[k] < merged[level] * 0.99) {
      ++level;
    }
    (*raw)[k] -= level * span;
  }
}

}  // namespace vgpu::k8s
