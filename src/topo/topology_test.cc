#include "topo/topology.h"

#include <gtest/gtest.h>

#include "topo/presets.h"

namespace vgpu::topo {
namespace {

TEST(Topology, PresetsAreSymmetricAndNamed) {
  for (const std::string& name : PresetNames()) {
    auto t = Preset(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_EQ(t->Asymmetry(), "") << name;
    EXPECT_EQ(t->name, name);
    EXPECT_FALSE(t->description.empty()) << name;
  }
  EXPECT_FALSE(Preset("dgx-z9000").has_value());
  EXPECT_EQ(ServerPresetNames().size(), 6u);
}

TEST(Topology, PresetShapes) {
  Topology h200 = *Preset("hgx-h200");
  EXPECT_EQ(h200.size(), 8);
  EXPECT_EQ(h200.Token(0, 7), "NV18");
  EXPECT_TRUE(h200.Link(0, 7).via_nvswitch);
  EXPECT_EQ(h200.Link(0, 7).pcie, PcieLevel::kSystem);
  EXPECT_EQ(h200.Link(0, 3).pcie, PcieLevel::kNode);
  Topology volta = *Preset("dgx1-volta");
  EXPECT_EQ(volta.Token(0, 3), "NV2");
  EXPECT_EQ(volta.Token(0, 1), "NV1");
  EXPECT_EQ(volta.Token(0, 5), "SYS");
  EXPECT_FALSE(volta.Link(0, 3).via_nvswitch);
  Topology sw = *Preset("pcie8-switch");
  EXPECT_EQ(sw.Token(0, 1), "PIX");
  EXPECT_EQ(sw.Token(0, 2), "PXB");
  EXPECT_EQ(sw.Token(3, 4), "SYS");
  EXPECT_EQ(Preset("pcie16-switch")->Token(0, 3), "PIX");
  EXPECT_EQ(Preset("pcie16-switch")->Token(0, 4), "PXB");
  EXPECT_EQ(Preset("dgx2")->size(), 16);
}

TEST(Topology, AsymmetryNamesThePair) {
  Topology t = *Preset("pcie4-nvbridge");
  PairLink l = t.Link(1, 3);
  l.nvlinks = 2;
  t.SetDirected(1, 3, l);
  EXPECT_EQ(t.Asymmetry(), "GPU1->GPU3 is NV2 but GPU3->GPU1 is SYS");
}

TEST(Topology, PcieTokens) {
  PcieLevel level;
  EXPECT_TRUE(ParsePcieLevelToken("PXB", &level));
  EXPECT_EQ(level, PcieLevel::kMultiple);
  EXPECT_TRUE(ParsePcieLevelToken("CPU", &level));
  EXPECT_EQ(level, PcieLevel::kNode);
  EXPECT_FALSE(ParsePcieLevelToken("NVX", &level));
  EXPECT_EQ(PcieLevelToken(PcieLevel::kHostBridge), "PHB");
}

// NVSwitch is recognised by the remote device type; the pair gets the smaller link count.
TEST(Topology, BuildFromNvmlFactsRecognisesNvSwitch) {
  std::vector<RawGpu> raw(3);
  for (int g = 0; g < 3; ++g) {
    raw[g].numa_node = 0;
    raw[g].ancestor.assign(3, PcieLevel::kNode);
    raw[g].p2p.assign(3, true);
  }
  for (int i = 0; i < 18; ++i) raw[0].links.push_back({true, -1});
  for (int i = 0; i < 12; ++i) raw[1].links.push_back({true, -1});
  raw[2].links.push_back({false, 0});  // one direct link 2->0
  raw[0].links.push_back({false, 2});
  raw[1].p2p[2] = false;
  raw[2].p2p[1] = false;
  Topology t = BuildTopology(raw);
  EXPECT_EQ(t.Link(0, 1).nvlinks, 12);
  EXPECT_TRUE(t.Link(0, 1).via_nvswitch);
  EXPECT_EQ(t.Link(0, 2).nvlinks, 1);
  EXPECT_FALSE(t.Link(0, 2).via_nvswitch);
  EXPECT_EQ(t.Link(1, 2).nvlinks, 0);
  EXPECT_FALSE(t.Link(1, 2).p2p);
  EXPECT_EQ(t.Asymmetry(), "");
}

}  // namespace
}  // namespace vgpu::topo
