// The bandwidth model against its calibration figures, the ring bottleneck, the set choice
// (objective, lookahead, NUMA), patterns and their rank order, and malformed annotations.
#include "topo/choose.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "topo/presets.h"

namespace vgpu::topo {
namespace {

GpuMask All(int n) { return (GpuMask{1} << n) - 1; }

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(Bandwidth, CalibrationFigures) {
  Evaluator h200(*Preset("hgx-h200"));
  EXPECT_NEAR(h200.RingBusBandwidth(All(8)), 476.0, 1e-9);  // nccl-tests#290, 8 x H100
  Evaluator sw(*Preset("pcie8-switch"));
  EXPECT_NEAR(sw.RingBusBandwidth(All(8)), 28.0, 1e-9);      // nccl#1639, 8 PCIe GPUs
  EXPECT_NEAR(BestBusBandwidth(sw, All(8), 4), 35.0, 1e-9);  // nccl#1639, 4 of them
  EXPECT_NEAR(sw.RingBusBandwidth(0b11), 40.0, 1e-9);
  Evaluator volta(*Preset("dgx1-volta"));
  EXPECT_NEAR(volta.Pair(0, 3), 43.5, 1e-9);  // 2 x 25 x 0.87
  EXPECT_NEAR(volta.Pair(0, 5), 7.0, 1e-9);   // SYS at PCIe Gen3
  EXPECT_EQ(volta.RingBusBandwidth(0b1), 0.0);
}

TEST(Bandwidth, PcieWidthAndGenerationScaleOnlyPcieLinks) {
  BandwidthModel m;
  PairLink sys;
  EXPECT_NEAR(PairBandwidth(m, sys, 5, 16), 28.0, 1e-9);
  EXPECT_NEAR(PairBandwidth(m, sys, 4, 16), 14.0, 1e-9);
  EXPECT_NEAR(PairBandwidth(m, sys, 5, 8), 14.0, 1e-9);
  EXPECT_NEAR(PairBandwidth(m, sys, 6, 32), 28.0, 1e-9);  // Gen6 / x32: no figure, as Gen5 x16
  PairLink nv;
  nv.nvlinks = 2;
  EXPECT_NEAR(PairBandwidth(m, nv, 3, 4), 43.5, 1e-9);
}

TEST(Bandwidth, RingBottleneckFindsTheBestRing) {
  Evaluator volta(*Preset("dgx1-volta"));
  // 0-3-2-1-0: NV2, NV2, NV2, NV1: 21.75.
  EXPECT_NEAR(volta.RingBusBandwidth(GpusMask({0, 1, 2, 3})), 21.75, 1e-9);
  // All eight: the cube-mesh holds a ring of NV2 links only (0-3-2-1-5-6-7-4).
  EXPECT_NEAR(volta.RingBusBandwidth(All(8)), 43.5, 1e-9);
  std::vector<int> ring = volta.Ring(All(8));
  ASSERT_EQ(ring.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(volta.topology().Link(ring[i], ring[(i + 1) % 8]).nvlinks, 2) << i;
  }
  // {0,1,4,5}: 0-1 NV1, 1-5 NV2, 5-4 NV1, 4-0 NV2: all NVLink.
  EXPECT_NEAR(volta.RingBusBandwidth(GpusMask({0, 1, 4, 5})), 21.75, 1e-9);
  // {0,1,2,7}: 7 reaches none of them over NVLink: SYS.
  EXPECT_NEAR(volta.RingBusBandwidth(GpusMask({0, 1, 2, 7})), 7.0, 1e-9);
}

TEST(Choose, BridgedPairsAndNumaOnNvSwitch) {
  Evaluator bridge(*Preset("pcie4-nvbridge"));
  SetChoice c = ChooseSet(bridge, All(4), 2);
  EXPECT_EQ(Sorted(c.gpus), (std::vector<int>{0, 1}));
  EXPECT_NEAR(c.bus_bandwidth_gbps, 261.0, 1e-9);
  EXPECT_EQ(Sorted(ChooseSet(bridge, 0b1100 | 0b0001, 2).gpus), (std::vector<int>{2, 3}));
  // NVSwitch: every set is equal; the set stays on one NUMA node.
  Evaluator h200(*Preset("hgx-h200"));
  EXPECT_EQ(Sorted(ChooseSet(h200, GpusMask({3, 4, 5, 6, 7}), 4).gpus),
            (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(Sorted(ChooseSet(h200, GpusMask({1, 2, 4}), 2).gpus), (std::vector<int>{1, 2}));
  EXPECT_TRUE(ChooseSet(h200, GpusMask({1}), 2).gpus.empty());
}

// The shortcut for boards where every pair is equal (NVSwitch) gives exactly the answer of the
// full search, for every free mask, size and pattern kind; it does not fire on mixed links.
TEST(Choose, UniformShortcutGivesTheSearchsAnswer) {
  ChooseOptions full;
  full.uniform_shortcut = false;
  CommPattern pipeline;
  pipeline.kind = CommPattern::Kind::kPipeline;
  for (const char* name : {"hgx-h200", "dgx-a100", "dgx1-volta"}) {
    Evaluator ev(*Preset(name));
    int checked = 0;
    for (GpuMask free = 1; free <= All(8); ++free) {
      for (int k = 1; k <= MaskCount(free); ++k) {
        SetChoice fast = ChooseSet(ev, free, k);
        SetChoice slow = ChooseSet(ev, free, k, {}, full);
        ASSERT_EQ(fast.gpus, slow.gpus) << name << " free " << free << " k " << k;
        EXPECT_DOUBLE_EQ(fast.bus_bandwidth_gbps, slow.bus_bandwidth_gbps);
        if (k >= 2 && k <= 5) {
          ASSERT_EQ(ChooseSet(ev, free, k, pipeline).gpus,
                    ChooseSet(ev, free, k, pipeline, full).gpus)
              << name << " pipeline, free " << free << " k " << k;
        }
        ++checked;
      }
    }
    EXPECT_EQ(checked, 1024) << name;  // sum over masks of their sizes: 8 * 2^7
  }
}

// Lookahead: among equally good sets, the one that leaves the best set for the next job.
TEST(Choose, LookaheadKeepsTheNodeWellConnected) {
  Evaluator volta(*Preset("dgx1-volta"));
  // Free {1,2,3,7}: {1,2} and {2,3} are both NV2. {1,2} leaves 3-7 (NV1); {2,3} leaves 1-7 (SYS).
  SetChoice with = ChooseSet(volta, GpusMask({1, 2, 3, 7}), 2);
  EXPECT_EQ(Sorted(with.gpus), (std::vector<int>{1, 2}));
  // A single GPU: the one whose loss hurts the rest least.
  Evaluator bridge(*Preset("pcie4-nvbridge"));
  SetChoice one = ChooseSet(bridge, GpusMask({0, 2, 3}), 1);
  EXPECT_EQ(one.gpus, (std::vector<int>{0}));  // keeps the 2-3 bridge free
  ChooseOptions no_lookahead;
  no_lookahead.lookahead = false;
  EXPECT_EQ(ChooseSet(bridge, GpusMask({2, 3, 1}), 1, {}, no_lookahead).gpus,
            (std::vector<int>{1}));
}

TEST(Choose, SixteenGpusUseTheBoundedSearch) {
  Evaluator sw(*Preset("pcie16-switch"));
  SetChoice c = ChooseSet(sw, All(16), 8);
  EXPECT_FALSE(c.exact);
  EXPECT_NEAR(c.bus_bandwidth_gbps, 35.0, 1e-9);  // one socket: PXB ring
  for (int g : c.gpus) EXPECT_EQ(g / 8, c.gpus[0] / 8);
  SetChoice four = ChooseSet(sw, All(16), 4);
  EXPECT_TRUE(four.exact);
  EXPECT_NEAR(four.bus_bandwidth_gbps, 40.0, 1e-9);  // one switch: PIX
}

TEST(Pattern, ParseAndErrorsNameTheField) {
  EXPECT_EQ(ParseCommPattern("", 4)->kind, CommPattern::Kind::kAllReduce);
  EXPECT_EQ(ParseCommPattern("allreduce,gb=2", 4)->gb, 2.0);
  auto tp = ParseCommPattern("tp=2,dp=4", 8);
  ASSERT_TRUE(tp);
  EXPECT_EQ(tp->tp, 2);
  EXPECT_EQ(tp->dp_gb, 0.125);
  auto m = ParseCommPattern("matrix=0 1 0;1 0 2;0 2 0", 3);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->matrix[1 * 3 + 2], 2.0);
  auto err = [](std::string_view text, int gpus) {
    auto p = ParseCommPattern(text, gpus);
    return p ? std::string() : p.error().message();
  };
  EXPECT_EQ(err("tp=4,dp=4", 8),
            "vgpu.io/comm-pattern: tp*dp = 16 ranks but the pod asks for 8 GPUs (more ranks than "
            "GPUs)");
  EXPECT_EQ(err("matrix=0 1;1 0;0 0", 2),
            "vgpu.io/comm-pattern: matrix has 3 ranks but the pod asks for 2 GPUs (more ranks "
            "than GPUs)");
  EXPECT_EQ(err("matrix=0 1;1", 2), "vgpu.io/comm-pattern: matrix row 1 has 1 values, expected 2");
  EXPECT_EQ(err("matrix=0 x;1 0", 2),
            "vgpu.io/comm-pattern: matrix row 0 column 1: \"x\" is not a non-negative number");
  EXPECT_EQ(err("ring", 2),
            "vgpu.io/comm-pattern: unknown pattern \"ring\" (known: allreduce, pipeline, "
            "tp=T,dp=D, matrix=...)");
  EXPECT_EQ(err("pipeline,gb=-1", 2), "vgpu.io/comm-pattern: field gb: bad value \"-1\"");
  EXPECT_EQ(err("tp=2", 2), "vgpu.io/comm-pattern: tp=T,dp=D needs both tp and dp");
  EXPECT_EQ(err("allreduce,colour=red", 2), "vgpu.io/comm-pattern: unknown field \"colour\"");
}

// Rank order: a pipeline across the DGX-1 cube-mesh must follow NVLink hops.
TEST(Pattern, RankOrderFollowsTheLinks) {
  Evaluator volta(*Preset("dgx1-volta"));
  CommPattern pipe = *ParseCommPattern("pipeline", 4);
  double best = 0;
  std::vector<int> order = BestRankOrder(volta, pipe, {0, 1, 2, 3}, &best);
  double naive = PatternSeconds(volta, pipe, {0, 1, 2, 3});
  EXPECT_LT(best, naive);
  for (int r = 0; r + 1 < 4; ++r) {
    EXPECT_EQ(volta.topology().Link(order[r], order[r + 1]).nvlinks, 2) << r;
  }
  // Tensor-parallel pairs on the bridges, data-parallel across.
  Evaluator bridge(*Preset("pcie4-nvbridge"));
  CommPattern tpdp = *ParseCommPattern("tp=2,dp=2", 4);
  SetChoice c = ChooseSet(bridge, All(4), 4, tpdp);
  ASSERT_EQ(c.gpus.size(), 4u);
  EXPECT_EQ(bridge.topology().Link(c.gpus[0], c.gpus[1]).nvlinks, 12);
  EXPECT_EQ(bridge.topology().Link(c.gpus[2], c.gpus[3]).nvlinks, 12);
  EXPECT_GT(PatternSeconds(bridge, tpdp, {0, 2, 1, 3}), c.comm_seconds * 5);
}

}  // namespace
}  // namespace vgpu::topo
