#include "topo/nvlink_sets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "topo/choose.h"
#include "topo/presets.h"

namespace vgpu::topo {
namespace {

// Brute force: some order of the set's GPUs is a ring of NVLink hops.
bool RingByPermutations(const Topology& t, GpuMask set) {
  std::vector<int> gpus = MaskGpus(set);
  if (gpus.size() < 2) return false;
  if (gpus.size() == 2) return t.Link(gpus[0], gpus[1]).nvlinks > 0;
  do {
    bool ok = true;
    for (size_t i = 0; i < gpus.size() && ok; ++i) {
      ok = t.Link(gpus[i], gpus[(i + 1) % gpus.size()]).nvlinks > 0;
    }
    if (ok) return true;
  } while (std::next_permutation(gpus.begin() + 1, gpus.end()));
  return false;
}

TEST(NvlinkSets, AnnotationValues) {
  EXPECT_FALSE(*ParseTopologyAnnotation(""));
  EXPECT_TRUE(*ParseTopologyAnnotation("require-nvlink"));
  auto bad = ParseTopologyAnnotation("prefer-nvlink");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(),
            "vgpu.io/topology: \"prefer-nvlink\" is not a topology requirement (known: "
            "require-nvlink)");
}

// Every set of every preset of up to 8 GPUs, against the brute force; and FindNvlinkSet finds a
// set exactly when some subset of the candidates has a ring, always one of them.
TEST(NvlinkSets, MatchTheBruteForceOnEveryPresetAndSet) {
  for (const std::string& name : PresetNames()) {
    const Topology t = *Preset(name);
    if (t.size() > 8) continue;
    SCOPED_TRACE(name);
    const std::vector<GpuMask> adj = NvlinkAdjacency(t);
    const GpuMask all = (GpuMask{1} << t.size()) - 1;
    std::vector<uint8_t> ring(all + 1, 0);
    for (GpuMask set = 1; set <= all; ++set) {
      ring[set] = RingByPermutations(t, set) ? 1 : 0;
      ASSERT_EQ(NvlinkConnected(adj, set), ring[set] != 0) << "set " << set;
    }
    for (GpuMask candidates = 1; candidates <= all; ++candidates) {
      for (int k = 2; k <= MaskCount(candidates); ++k) {
        bool exists = false;
        for (GpuMask sub = candidates; sub != 0 && !exists; sub = (sub - 1) & candidates) {
          exists = MaskCount(sub) == k && ring[sub];
        }
        const GpuMask found = FindNvlinkSet(adj, candidates, k);
        ASSERT_EQ(found != 0, exists) << "candidates " << candidates << " k " << k;
        if (found != 0) {
          EXPECT_EQ(found & ~candidates, 0u);
          EXPECT_EQ(MaskCount(found), k);
          EXPECT_TRUE(ring[found]);
        }
      }
    }
  }
}

TEST(NvlinkSets, KnownShapes) {
  // PCIe only: no pair has NVLink.
  const std::vector<GpuMask> pcie = NvlinkAdjacency(*Preset("pcie8-switch"));
  EXPECT_EQ(FindNvlinkSet(pcie, 0xFF, 2), 0u);
  // Bridged pairs 0-1 and 2-3: a pair, never three or four.
  const std::vector<GpuMask> bridged = NvlinkAdjacency(*Preset("pcie4-nvbridge"));
  EXPECT_EQ(FindNvlinkSet(bridged, 0xF, 2), 0x3u);
  EXPECT_EQ(FindNvlinkSet(bridged, 0xD, 2), 0xCu);  // GPUs 0, 2, 3 free: 2-3
  EXPECT_EQ(FindNvlinkSet(bridged, 0x5, 2), 0u);    // GPUs 0 and 2: no bridge
  EXPECT_EQ(FindNvlinkSet(bridged, 0xF, 3), 0u);
  EXPECT_EQ(FindNvlinkSet(bridged, 0xF, 4), 0u);
  // NVSwitch: every set.
  const std::vector<GpuMask> hgx = NvlinkAdjacency(*Preset("hgx-h200"));
  EXPECT_EQ(FindNvlinkSet(hgx, 0xFF, 8), 0xFFu);
  EXPECT_TRUE(NvlinkConnected(hgx, 0x81));
  // The hybrid cube-mesh: all eight form a ring, GPUs 3 and 4 share no link.
  const std::vector<GpuMask> dgx1 = NvlinkAdjacency(*Preset("dgx1-volta"));
  EXPECT_TRUE(NvlinkConnected(dgx1, 0xFF));
  EXPECT_FALSE(NvlinkConnected(dgx1, 0x18));
  // A 16-GPU NVSwitch box is searched exactly too.
  const std::vector<GpuMask> dgx2 = NvlinkAdjacency(*Preset("dgx2"));
  EXPECT_EQ(MaskCount(FindNvlinkSet(dgx2, 0xFFFF, 16)), 16);
}

// ChooseSet with require_nvlink: only connected sets, none when there is none; without it the
// bandwidth model may prefer a PCIe pair.
TEST(NvlinkSets, ChooseSetHonoursTheRequirement) {
  Evaluator bridged(*Preset("pcie4-nvbridge"));
  ChooseOptions nvlink;
  nvlink.require_nvlink = true;
  EXPECT_EQ(ChooseSet(bridged, 0x5, 2, {}, nvlink).gpus.size(), 0u);  // 0 and 2: SYS
  EXPECT_EQ(ChooseSet(bridged, 0x5, 2).gpus.size(), 2u);              // allowed without it
  const SetChoice pair = ChooseSet(bridged, 0xD, 2, {}, nvlink);
  EXPECT_EQ(GpusMask(pair.gpus), 0xCu);
  EXPECT_EQ(ChooseSet(bridged, 0xF, 4, {}, nvlink).gpus.size(), 0u);
  Evaluator dgx1(*Preset("dgx1-volta"));
  for (GpuMask free = 1; free <= 0xFF; ++free) {
    for (int k = 2; k <= 4 && k <= MaskCount(free); ++k) {
      const SetChoice c = ChooseSet(dgx1, free, k, {}, nvlink);
      const std::vector<GpuMask> adj = NvlinkAdjacency(dgx1.topology());
      ASSERT_EQ(c.gpus.empty(), FindNvlinkSet(adj, free, k) == 0) << free << " " << k;
      if (!c.gpus.empty()) {
        EXPECT_TRUE(NvlinkConnected(adj, GpusMask(c.gpus)));
      }
    }
  }
}

}  // namespace
}  // namespace vgpu::topo
