#include "topo/topology.h"

#include <algorithm>

namespace vgpu::topo {

std::string_view PcieLevelToken(PcieLevel level) {
  switch (level) {
    case PcieLevel::kInternal:
    case PcieLevel::kSingle:
      return "PIX";
    case PcieLevel::kMultiple:
      return "PXB";
    case PcieLevel::kHostBridge:
      return "PHB";
    case PcieLevel::kNode:
      return "NODE";
    case PcieLevel::kSystem:
      return "SYS";
  }
  return "SYS";
}

bool ParsePcieLevelToken(std::string_view token, PcieLevel* level) {
  struct Entry {
    std::string_view token;
    PcieLevel level;
  };
  // "CPU" is the pre-NODE name nvidia-smi printed for the same level.
  static constexpr Entry kTable[] = {{"PIX", PcieLevel::kSingle},     {"PXB", PcieLevel::kMultiple},
                                     {"PHB", PcieLevel::kHostBridge}, {"NODE", PcieLevel::kNode},
                                     {"CPU", PcieLevel::kNode},       {"SYS", PcieLevel::kSystem},
                                     {"SOC", PcieLevel::kSystem}};
  for (const Entry& e : kTable) {
    if (e.token == token) {
      *level = e.level;
      return true;
    }
  }
  return false;
}

Topology::Topology(int gpu_count)
    : gpus_(static_cast<size_t>(std::max(gpu_count, 0))),
      links_(static_cast<size_t>(std::max(gpu_count, 0)) * std::max(gpu_count, 0)) {}

void Topology::SetLink(int a, int b, const PairLink& link) {
  links_[Index(a, b)] = link;
  links_[Index(b, a)] = link;
}

std::string Topology::Token(int a, int b) const {
  if (a == b) return "X";
  const PairLink& l = Link(a, b);
  if (l.nvlinks > 0) return "NV" + std::to_string(l.nvlinks);
  return std::string(PcieLevelToken(l.pcie));
}

std::string Topology::Asymmetry() const {
  for (int a = 0; a < size(); ++a) {
    for (int b = a + 1; b < size(); ++b) {
      const PairLink& x = Link(a, b);
      const PairLink& y = Link(b, a);
      if (x == y) continue;
      std::string ab = "GPU" + std::to_string(a) + "->GPU" + std::to_string(b);
      std::string ba = "GPU" + std::to_string(b) + "->GPU" + std::to_string(a);
      if (x.nvlinks != y.nvlinks || x.pcie != y.pcie) {
        return ab + " is " + Token(a, b) + " but " + ba + " is " + Token(b, a);
      }
      return ab + " and " + ba + " disagree on peer-to-peer support or NVSwitch";
    }
  }
  return "";
}

Topology BuildTopology(const std::vector<RawGpu>& gpus) {
  int n = static_cast<int>(gpus.size());
  Topology t(n);
  std::vector<int> switch_links(n, 0);
  std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
  for (int a = 0; a < n; ++a) {
    t.MutableGpu(a).numa_node = gpus[a].numa_node;
    t.MutableGpu(a).cpu_affinity = gpus[a].cpu_affinity;
    for (const NvLinkEnd& end : gpus[a].links) {
      if (end.to_switch) {
        ++switch_links[a];
      } else if (end.peer >= 0 && end.peer < n && end.peer != a) {
        ++direct[a][end.peer];
      }
    }
  }
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      PairLink l;
      if (b < static_cast<int>(gpus[a].ancestor.size())) l.pcie = gpus[a].ancestor[b];
      if (b < static_cast<int>(gpus[a].p2p.size())) l.p2p = gpus[a].p2p[b];
      l.nvlinks = direct[a][b];
      if (switch_links[a] > 0 && switch_links[b] > 0) {
        // HAMi's rule: through NVSwitch, the pair gets the smaller of the two link counts.
        l.nvlinks += std::min(switch_links[a], switch_links[b]);
        l.via_nvswitch = true;
      }
      t.SetDirected(a, b, l);
    }
  }
  return t;
}

}  // namespace vgpu::topo
