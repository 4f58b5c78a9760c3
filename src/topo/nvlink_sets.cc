#include "topo/nvlink_sets.h"

#include <string>

namespace vgpu::topo {
namespace {

GpuMask Bit(int i) { return GpuMask{1} << i; }
int Lowest(GpuMask m) { return __builtin_ctz(m); }
// The GPUs above index i (none above 31).
GpuMask Above(int i) { return ~((GpuMask{2} << i) - 1); }

// Removes GPUs with fewer than two NVLink neighbours in `m` until none is left: they cannot lie
// on a cycle (the 2-core of the NVLink graph on `m`).
GpuMask TwoCore(std::span<const GpuMask> adj, GpuMask m) {
  for (bool changed = true; changed;) {
    changed = false;
    for (GpuMask rest = m; rest != 0; rest &= rest - 1) {
      const int v = Lowest(rest);
      if (MaskCount(adj[v] & m) < 2) {
        m &= ~Bit(v);
        changed = true;
      }
    }
  }
  return m;
}

// Depth-first search for a cycle of `k` GPUs through `start` (the lowest of the cycle) using
// only GPUs of `allowed` above `start`; `path` holds the GPUs so far, ending at `last`.
bool ExtendCycle(std::span<const GpuMask> adj, GpuMask allowed, int start, int last, GpuMask path,
                 int k, GpuMask* found) {
  if (MaskCount(path) == k) {
    if (adj[last] & Bit(start)) {
      *found = path;
      return true;
    }
    return false;
  }
  for (GpuMask next = adj[last] & allowed & ~path; next != 0; next &= next - 1) {
    const int v = Lowest(next);
    if (ExtendCycle(adj, allowed, start, v, path | Bit(v), k, found)) return true;
  }
  return false;
}

}  // namespace

Result<bool> ParseTopologyAnnotation(std::string_view value) {
  if (value.empty()) return false;
  if (value == kRequireNvlink) return true;
  return Status::InvalidArgument(
      std::string(kTopologyAnnotation) + ": \"" + std::string(value) +
      "\" is not a topology requirement (known: " + std::string(kRequireNvlink) + ")");
}

std::vector<GpuMask> NvlinkAdjacency(const Topology& t) {
  std::vector<GpuMask> adj(static_cast<size_t>(t.size()), 0);
  for (int a = 0; a < t.size() && a < 32; ++a) {
    for (int b = 0; b < t.size() && b < 32; ++b) {
      if (a != b && t.Link(a, b).nvlinks > 0) adj[a] |= Bit(b);
    }
  }
  return adj;
}

bool NvlinkConnected(std::span<const GpuMask> adj, GpuMask set) {
  const int k = MaskCount(set);
  if (k < 2) return false;
  for (GpuMask rest = set; rest != 0; rest &= rest - 1) {
    if (static_cast<size_t>(Lowest(rest)) >= adj.size()) return false;
  }
  return FindNvlinkSet(adj, set, k) == set;
}

GpuMask FindNvlinkSet(std::span<const GpuMask> adj, GpuMask candidates, int k) {
  if (k < 2 || MaskCount(candidates) < k) return 0;
  const GpuMask known = adj.size() >= 32 ? ~GpuMask{0} : Bit(static_cast<int>(adj.size())) - 1;
  candidates &= known;
  if (k == 2) {
    for (GpuMask rest = candidates; rest != 0; rest &= rest - 1) {
      const int a = Lowest(rest);
      const GpuMask peers = adj[a] & candidates & Above(a);
      if (peers != 0) return Bit(a) | Bit(Lowest(peers));
    }
    return 0;
  }
  const GpuMask core = TwoCore(adj, candidates);
  if (MaskCount(core) < k) return 0;
  for (GpuMask rest = core; rest != 0; rest &= rest - 1) {
    const int start = Lowest(rest);
    // GPUs above `start` only: each cycle is searched from its lowest GPU, once.
    const GpuMask above = core & Above(start);
    if (MaskCount(above) + 1 < k) break;
    GpuMask found = 0;
    if (ExtendCycle(adj, above, start, start, Bit(start), k, &found)) return found;
  }
  return 0;
}

}  // namespace vgpu::topo
