#include "topo/bandwidth.h"

#include <algorithm>
#include <functional>

namespace vgpu::topo {

namespace {

double PcieBandwidth(const BandwidthModel& m, const PairLink& l) {
  if (!l.p2p) return m.no_p2p_gbps;
  switch (l.pcie) {
    case PcieLevel::kInternal:
    case PcieLevel::kSingle:
      return m.pix_gbps;
    case PcieLevel::kMultiple:
      return m.pxb_gbps;
    case PcieLevel::kHostBridge:
      return m.phb_gbps;
    case PcieLevel::kNode:
      return m.node_gbps;
    case PcieLevel::kSystem:
      return m.sys_gbps;
  }
  return m.sys_gbps;
}

}  // namespace

double PairBandwidth(const BandwidthModel& m, const PairLink& l, int pcie_generation,
                     int pcie_width) {
  if (l.nvlinks > 0) {
    double eff = l.via_nvswitch ? m.nvswitch_efficiency : m.nvlink_direct_efficiency;
    return l.nvlinks * m.nvlink_gbps_per_link * eff;
  }
  int gen = std::clamp(pcie_generation, 1, 5);
  double lanes = std::clamp(pcie_width, 1, 16) / 16.0;
  return PcieBandwidth(m, l) / static_cast<double>(1 << (5 - gen)) * lanes;
}

std::vector<int> MaskGpus(GpuMask m) {
  std::vector<int> out;
  for (int i = 0; m != 0; ++i, m >>= 1) {
    if (m & 1u) out.push_back(i);
  }
  return out;
}

GpuMask GpusMask(const std::vector<int>& gpus) {
  GpuMask m = 0;
  for (int g : gpus) m |= GpuMask{1} << g;
  return m;
}

Evaluator::Evaluator(const Topology& topology, BandwidthModel model)
    : topology_(topology), model_(model), n_(topology.size()) {
  bw_.assign(static_cast<size_t>(n_) * n_, 0.0);
  for (int a = 0; a < n_; ++a) {
    for (int b = 0; b < n_; ++b) {
      if (a != b) {
        bw_[a * n_ + b] = PairBandwidth(model_, topology_.Link(a, b), topology_.pcie_generation,
                                        topology_.pcie_width);
      }
    }
  }
  if (n_ <= 16) ring_memo_.assign(size_t{1} << n_, -1.0);
}

// Is there a Hamiltonian cycle over `gpus` using only pairs of at least `threshold`? Bitmask
// dynamic programme over paths from gpus[0]: reach[mask] = set of possible end points.
bool Evaluator::HasRing(const std::vector<int>& gpus, double threshold,
                        std::vector<int>* ring) const {
  int k = static_cast<int>(gpus.size());
  std::vector<uint32_t> adj(k, 0);
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j < k; ++j) {
      if (i != j && Pair(gpus[i], gpus[j]) >= threshold) adj[i] |= 1u << j;
    }
  }
  uint32_t full = (k == 32) ? ~0u : (1u << k) - 1;
  std::vector<uint32_t> reach(size_t{1} << k, 0);
  reach[1] = 1;
  for (uint32_t mask = 1; mask <= full; ++mask) {
    uint32_t ends = reach[mask];
    if (ends == 0 || !(mask & 1u)) continue;
    for (uint32_t e = ends; e != 0; e &= e - 1) {
      int v = __builtin_ctz(e);
      for (uint32_t next = adj[v] & ~mask; next != 0; next &= next - 1) {
        int u = __builtin_ctz(next);
        reach[mask | (1u << u)] |= 1u << u;
      }
    }
  }
  uint32_t closing = reach[full] & adj[0];
  if (closing == 0) return false;
  if (ring != nullptr) {
    // Walk back from an end that closes the cycle.
    ring->assign(k, 0);
    uint32_t mask = full;
    int v = __builtin_ctz(closing);
    for (int pos = k - 1; pos > 0; --pos) {
      (*ring)[pos] = gpus[v];
      uint32_t prev_mask = mask & ~(1u << v);
      int prev = -1;
      for (uint32_t e = reach[prev_mask]; e != 0; e &= e - 1) {
        int w = __builtin_ctz(e);
        if (adj[w] & (1u << v)) {
          prev = w;
          break;
        }
      }
      mask = prev_mask;
      v = prev;
    }
    (*ring)[0] = gpus[0];
  }
  return true;
}

double Evaluator::RingBusBandwidth(GpuMask set) {
  if (MaskCount(set) < 2) return 0.0;
  if (!ring_memo_.empty() && ring_memo_[set] >= 0.0) return ring_memo_[set];
  std::vector<int> gpus = MaskGpus(set);
  int k = static_cast<int>(gpus.size());
  double result = 0.0;
  if (k == 2) {
    result = Pair(gpus[0], gpus[1]);
  } else {
    // Upper bound: every GPU of a ring uses two of its pairs.
    double bound = 1e300;
    std::vector<double> levels;
    for (int i = 0; i < k; ++i) {
      double first = 0, second = 0;
      for (int j = 0; j < k; ++j) {
        if (i == j) continue;
        double b = Pair(gpus[i], gpus[j]);
        levels.push_back(b);
        if (b > first) {
          second = first;
          first = b;
        } else if (b > second) {
          second = b;
        }
      }
      bound = std::min(bound, second);
    }
    std::sort(levels.begin(), levels.end(), std::greater<>());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
    for (double t : levels) {
      if (t > bound) continue;
      if (HasRing(gpus, t, nullptr)) {
        result = t;
        break;
      }
    }
  }
  if (!ring_memo_.empty()) ring_memo_[set] = result;
  return result;
}

std::vector<int> Evaluator::Ring(GpuMask set) {
  std::vector<int> gpus = MaskGpus(set);
  if (gpus.size() < 3) return gpus;
  double bw = RingBusBandwidth(set);
  std::vector<int> ring;
  if (!HasRing(gpus, bw, &ring)) return gpus;
  return ring;
}

double Evaluator::AllReduceSeconds(GpuMask set, double gb) {
  int k = MaskCount(set);
  if (k < 2) return 0.0;
  return 2.0 * (k - 1) / k * gb / RingBusBandwidth(set);
}

}  // namespace vgpu::topo
