// Topology in the extender: the inventory's topology, multi-GPU pods given the best-connected set
// on a node (Assume), and nodes scored by the best set they offer.
#include "k8s/extender/placement_topology.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "k8s/extender/placement_state.h"
#include "topo/nvlink_sets.h"
#include "topo/presets.h"

namespace vgpu::k8s {
namespace {

// 4 GPUs; NVLink bridges join 0-2 and 1-3 (so the lowest indices are the wrong pair).
NodeInventory Bridged(const std::string& node, bool with_links) {
  NodeInventory inv;
  const char* rows[4][4] = {{"X", "SYS", "NV12", "SYS"},
                            {"SYS", "X", "SYS", "NV12"},
                            {"NV12", "SYS", "X", "SYS"},
                            {"SYS", "NV12", "SYS", "X"}};
  for (int i = 0; i < 4; ++i) {
    InventoryGpu g{
        node + "-GPU-" + std::to_string(i), i, "NVIDIA A100 80GB PCIe", 81920, 10, true, i % 2, {}};
    if (with_links) inv.links[i].assign(rows[i], rows[i] + 4);
    inv.gpus.push_back(g);
  }
  return inv;
}

TEST(PlacementTopology, TopologyOfInventory) {
  topo::Topology t = TopologyOfInventory(Bridged("n", true));
  EXPECT_EQ(t.Token(0, 2), "NV12");
  EXPECT_EQ(t.Token(0, 1), "SYS");
  EXPECT_EQ(t.Gpu(1).numa_node, 1);
  // Without links rows: nvlink_peers (count unknown: one link), NUMA for the rest.
  NodeInventory peers = Bridged("n", false);
  peers.gpus[0].nvlink_peers = {"n-GPU-2"};
  peers.gpus[2].nvlink_peers = {"n-GPU-0"};
  topo::Topology p = TopologyOfInventory(peers);
  EXPECT_EQ(p.Token(0, 2), "NV1");
  EXPECT_EQ(p.Token(1, 3), "NODE");
  EXPECT_EQ(p.Token(0, 1), "SYS");
}

TEST(PlacementTopology, LinksRoundTripThroughTheInventoryText) {
  NodeInventory inv = Bridged("n", true);
  std::string text = FormatInventory(inv);
  EXPECT_NE(text.find(R"("links":["X","SYS","NV12","SYS"])"), std::string::npos) << text;
  auto back = ParseInventory(text);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, inv);
  // Without links the text is what it always was.
  EXPECT_EQ(FormatInventory(Bridged("n", false)).find("links"), std::string::npos);
  auto bad = ParseInventory(R"({"version":1,"gpus":[{"uuid":"G","index":0,"model":"m",)"
                            R"("memory_mib":1,"units":1,"links":"NV1"}]})");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("gpus[0].links"), std::string::npos)
      << bad.error().message();
}

TEST(PlacementTopology, PcieLinkOfTheInventoryScalesThePcieFigures) {
  NodeInventory inv = Bridged("n", true);
  EXPECT_EQ(TopologyOfInventory(inv).pcie_generation, 4);  // not given: Gen4 x16
  inv.pcie_generation = 5;
  inv.pcie_width = 8;
  std::string text = FormatInventory(inv);
  EXPECT_NE(text.find(R"("pcie":{"generation":5,"width":8})"), std::string::npos) << text;
  auto back = ParseInventory(text);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, inv);
  topo::Topology t = TopologyOfInventory(*back);
  EXPECT_EQ(t.pcie_generation, 5);
  EXPECT_EQ(t.pcie_width, 8);
  topo::Evaluator ev(t);
  EXPECT_NEAR(ev.Pair(0, 1), 14.0, 1e-9);  // SYS: 28 GB/s at Gen5 x16, half at x8
  auto bad = ParseInventory(R"({"version":1,"gpus":[],"pcie":{"generation":"4"}})");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("pcie.generation"), std::string::npos)
      << bad.error().message();
}

TEST(PlacementTopology, RankByTopologyKeepsThePolicyOrderInsideALevel) {
  std::vector<int64_t> raw = {50, 90, 10, 70};
  const std::vector<uint8_t> feasible = {1, 1, 1, 1};
  const std::vector<double> bw = {261, 14, 261, 260};  // 260 is within 1% of 261
  RankByTopology(&raw, feasible, bw);
  // Level 0: nodes 0, 2, 3 keep 50, 10, 70; node 1 drops below them all.
  EXPECT_EQ(raw, (std::vector<int64_t>{50, 9, 10, 70}));
}

PodGpuRequest TwoWholeGpus() {
  PodGpuRequest r;
  ContainerGpuRequest c;
  c.name = "main";
  c.count = 2;
  c.cores = 100;
  r.containers.push_back(c);
  return r;
}

TEST(PlacementTopology, AssumeGivesTheBridgedPairAndScoresPreferIt) {
  StateOptions o;
  auto made = PlacementState::Create(o);
  ASSERT_TRUE(made.has_value()) << made.error().ToString();
  PlacementState& s = **made;
  s.UpsertNode("bridged", Bridged("bridged", true));
  NodeInventory flat = Bridged("flat", true);
  for (auto& [index, row] : flat.links) {
    for (auto& token : row) {
      if (token == "NV12") token = "SYS";
    }
  }
  s.UpsertNode("flat", flat);
  std::vector<int64_t> scores = s.Score(TwoWholeGpus(), {"bridged", "flat"});
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_EQ(scores[0], 10);
  EXPECT_LT(scores[1], 10);
  auto ticket = s.Assume("uid-1", "ns", "p1", TwoWholeGpus(), "bridged");
  ASSERT_TRUE(ticket.has_value()) << ticket.error().ToString();
  std::vector<int> got;
  for (const AssignedGpu& g : ticket->assignment.containers.at(0).gpus) got.push_back(g.index);
  std::sort(got.begin(), got.end());
  EXPECT_TRUE(got == (std::vector<int>{0, 2}) || got == (std::vector<int>{1, 3}))
      << got[0] << "," << got[1];
  // The second pod gets the other bridge.
  auto second = s.Assume("uid-2", "ns", "p2", TwoWholeGpus(), "bridged");
  ASSERT_TRUE(second.has_value()) << second.error().ToString();
  std::vector<int> other;
  for (const AssignedGpu& g : second->assignment.containers.at(0).gpus) other.push_back(g.index);
  std::sort(other.begin(), other.end());
  EXPECT_EQ(other[1] - other[0], 2);
}

// A node whose inventory carries a preset's `topo -m` rows, as the node daemon writes them.
NodeInventory OfPreset(const std::string& node, const std::string& preset) {
  topo::Topology t = *topo::Preset(preset);
  NodeInventory inv;
  for (int i = 0; i < t.size(); ++i) {
    inv.gpus.push_back(
        {node + "-GPU-" + std::to_string(i), i, "GPU", 32768, 10, true, t.Gpu(i).numa_node, {}});
    for (int j = 0; j < t.size(); ++j) inv.links[i].push_back(i == j ? "X" : t.Token(i, j));
  }
  return inv;
}

PodGpuRequest WholeGpus(int count, const std::string& pattern) {
  PodGpuRequest r = TwoWholeGpus();
  r.containers[0].count = count;
  r.comm_pattern = pattern;
  return r;
}

// The rank order a pod's assignment gives (its GPUs in the order the container sees them).
std::vector<int> AssumedOrder(PlacementState& s, const std::string& uid, const PodGpuRequest& r,
                              const std::string& node) {
  auto ticket = s.Assume(uid, "ns", uid, r, node);
  EXPECT_TRUE(ticket.has_value()) << ticket.error().ToString();
  std::vector<int> order;
  if (!ticket) return order;
  for (const AssignedGpu& g : ticket->assignment.containers.at(0).gpus) order.push_back(g.index);
  // The assignment says the order is the container's device order exactly for patterns.
  EXPECT_EQ(ticket->assignment.containers.at(0).rank_order, !r.comm_pattern.empty());
  const std::string text = FormatAssignment(ticket->assignment);
  EXPECT_EQ(text.find("\"rank_order\":true") != std::string::npos, !r.comm_pattern.empty()) << text;
  auto back = ParseAssignment(text);
  EXPECT_TRUE(back.has_value() && *back == ticket->assignment);
  return order;
}

TEST(PlacementTopology, PatternsGetTheirSetAndRankOrderInTheAssignment) {
  auto made = PlacementState::Create(StateOptions{});
  ASSERT_TRUE(made.has_value()) << made.error().ToString();
  PlacementState& s = **made;
  s.UpsertNode("dgx1", OfPreset("dgx1", "dgx1-volta"));
  s.UpsertNode("bridged", OfPreset("bridged", "pcie4-nvbridge"));
  const topo::Topology volta = *topo::Preset("dgx1-volta");
  const topo::Topology bridge = *topo::Preset("pcie4-nvbridge");

  // An 8-stage pipeline on the DGX-1: every consecutive pair of stages on an NVLink, which the
  // index order is not (GPUs 3 and 4 share none).
  ASSERT_EQ(volta.Link(3, 4).nvlinks, 0);
  std::vector<int> pipe = AssumedOrder(s, "pipe8", WholeGpus(8, "pipeline"), "dgx1");
  ASSERT_EQ(pipe.size(), 8u);
  for (int r = 0; r + 1 < 8; ++r) {
    EXPECT_GT(volta.Link(pipe[r], pipe[r + 1]).nvlinks, 0) << "stages " << r << "-" << r + 1;
  }
  s.RemovePod("pipe8");
  // A 4-stage pipeline: the stages follow NV2 links (the DGX-1's double links).
  pipe = AssumedOrder(s, "pipe4", WholeGpus(4, "pipeline"), "dgx1");
  ASSERT_EQ(pipe.size(), 4u);
  for (int r = 0; r + 1 < 4; ++r) EXPECT_EQ(volta.Link(pipe[r], pipe[r + 1]).nvlinks, 2) << r;
  // TP=2 x DP=2 on the DGX-1: both tensor-parallel pairs on NV2 links.
  std::vector<int> tp = AssumedOrder(s, "tp-dgx1", WholeGpus(4, "tp=2,dp=2"), "dgx1");
  ASSERT_EQ(tp.size(), 4u);
  EXPECT_EQ(volta.Link(tp[0], tp[1]).nvlinks, 2);
  EXPECT_EQ(volta.Link(tp[2], tp[3]).nvlinks, 2);

  // The bridged PCIe box: a 4-stage pipeline crosses the sockets once, between two bridged
  // pairs; TP=2 x DP=2 puts each tensor-parallel group on a bridge. Index order would put the
  // TP groups on 0-1 and 2-3, which here are the bridges; the pod's order must say so too.
  pipe = AssumedOrder(s, "pipe-bridge", WholeGpus(4, "pipeline"), "bridged");
  ASSERT_EQ(pipe.size(), 4u);
  EXPECT_EQ(bridge.Link(pipe[0], pipe[1]).nvlinks, 12);
  EXPECT_EQ(bridge.Link(pipe[2], pipe[3]).nvlinks, 12);
  s.RemovePod("pipe-bridge");
  tp = AssumedOrder(s, "tp-bridge", WholeGpus(4, "tp=2,dp=2"), "bridged");
  ASSERT_EQ(tp.size(), 4u);
  EXPECT_EQ(bridge.Link(tp[0], tp[1]).nvlinks, 12);
  EXPECT_EQ(bridge.Link(tp[2], tp[3]).nvlinks, 12);
}

// Bridges on 0-2 and 1-3: the index order is the wrong TP grouping, and the assignment is not in
// index order.
TEST(PlacementTopology, TensorParallelOrderIsNotTheIndexOrder) {
  auto made = PlacementState::Create(StateOptions{});
  ASSERT_TRUE(made.has_value()) << made.error().ToString();
  PlacementState& s = **made;
  s.UpsertNode("bridged", Bridged("bridged", true));
  std::vector<int> tp = AssumedOrder(s, "tp", WholeGpus(4, "tp=2,dp=2"), "bridged");
  ASSERT_EQ(tp.size(), 4u);
  EXPECT_EQ(std::abs(tp[0] - tp[1]), 2);
  EXPECT_EQ(std::abs(tp[2] - tp[3]), 2);
  // All-reduce keeps index order (NCCL orders its rings itself).
  s.RemovePod("tp");
  std::vector<int> all = AssumedOrder(s, "ar", WholeGpus(4, ""), "bridged");
  EXPECT_EQ(all, (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace vgpu::k8s

namespace vgpu::k8s {
namespace {

PodGpuRequest NvlinkGpus(int count) {
  PodGpuRequest r = TwoWholeGpus();
  r.containers[0].count = count;
  r.require_nvlink = true;
  return r;
}

// vgpu.io/topology: require-nvlink: filter refuses a node with no free NVLink-connected set of
// the pod's size, naming the reason; Assume gives a connected set even where the bandwidth model
// would pick another; without the annotation the same nodes take the pod.
TEST(PlacementTopology, RequireNvlinkRefusesNodesWithoutAConnectedSet) {
  auto made = PlacementState::Create(StateOptions{});
  ASSERT_TRUE(made.has_value()) << made.error().ToString();
  PlacementState& s = **made;
  s.UpsertNode("pcie", OfPreset("pcie", "pcie8-switch"));          // no NVLink at all
  s.UpsertNode("bridged", OfPreset("bridged", "pcie4-nvbridge"));  // NVLink pairs 0-1, 2-3
  s.UpsertNode("dgx1", OfPreset("dgx1", "dgx1-volta"));            // a ring of all 8
  const std::vector<std::string> nodes = {"pcie", "bridged", "dgx1"};

  FilterResult pair = s.Filter(NvlinkGpus(2), nodes);
  EXPECT_EQ(pair.feasible, (std::vector<std::string>{"bridged", "dgx1"}));
  ASSERT_EQ(pair.unresolvable.count("pcie"), 1u);
  EXPECT_EQ(pair.unresolvable.at("pcie"),
            "vgpu: node has fewer than 2 NVLink-connected healthy GPU(s) of an allowed model and "
            "UUID with 32768 MiB (vgpu.io/topology: require-nvlink)");
  FilterResult four = s.Filter(NvlinkGpus(4), nodes);
  EXPECT_EQ(four.feasible, std::vector<std::string>{"dgx1"});
  EXPECT_EQ(four.unresolvable.count("bridged"), 1u);
  // Without the annotation every node fits.
  PodGpuRequest plain = NvlinkGpus(4);
  plain.require_nvlink = false;
  EXPECT_EQ(s.Filter(plain, nodes).feasible.size(), 3u);

  // Bridged box: the first pod takes a bridge; with one GPU of the other bridge taken by a
  // plain pod, no pair is left and the node fails (preemption could help), naming the reason.
  auto first = s.Assume("a", "ns", "a", NvlinkGpus(2), "bridged");
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  std::vector<int> got;
  for (const AssignedGpu& g : first->assignment.containers.at(0).gpus) got.push_back(g.index);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got[1] - got[0], 1) << got[0] << "," << got[1];
  EXPECT_EQ(got[0] % 2, 0);
  PodGpuRequest one = TwoWholeGpus();
  one.containers[0].count = 1;
  ASSERT_TRUE(s.Assume("b", "ns", "b", one, "bridged").has_value());
  FilterResult left = s.Filter(NvlinkGpus(2), {"bridged"});
  EXPECT_TRUE(left.feasible.empty());
  ASSERT_EQ(left.failed.count("bridged"), 1u);
  EXPECT_NE(left.failed.at("bridged").find("needs 2 NVLink-connected GPU(s)"), std::string::npos)
      << left.failed.at("bridged");
  EXPECT_FALSE(s.Assume("c", "ns", "c", NvlinkGpus(2), "bridged").has_value());

  // DGX-1: a 4-GPU pod gets a ring of NVLink hops.
  auto ring = s.Assume("e", "ns", "e", NvlinkGpus(4), "dgx1");
  ASSERT_TRUE(ring.has_value()) << ring.error().ToString();
  topo::GpuMask set = 0;
  for (const AssignedGpu& g : ring->assignment.containers.at(0).gpus) set |= 1u << g.index;
  EXPECT_TRUE(topo::NvlinkConnected(topo::NvlinkAdjacency(*topo::Preset("dgx1-volta")), set));
}

}  // namespace
}  // namespace vgpu::k8s
