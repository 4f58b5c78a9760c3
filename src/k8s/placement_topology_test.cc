// Topology in the extender: the inventory's topology, multi-GPU pods given the best-connected set
// on a node (Assume), and nodes scored by the best set they offer.
#include "k8s/placement_topology.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "k8s/placement_state.h"

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

}  // namespace
}  // namespace vgpu::k8s
