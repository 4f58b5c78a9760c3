#include "topo/topo_matrix.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "topo/presets.h"

namespace vgpu::topo {
namespace {

std::string Read(const std::string& name) {
  std::ifstream in("tests/topo/data/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TopoMatrix, FormatIsByteForByteNvidiaSmi) {
  std::string golden = Read("hgx-h200.golden");
  ASSERT_FALSE(golden.empty());
  EXPECT_EQ(FormatTopoMatrix(*Preset("hgx-h200")), golden);
}

// The published matrices (tests/topo/data, sources in docs/topology.md) against the presets.
TEST(TopoMatrix, PublishedMatricesMatchPresetsCellForCell) {
  struct Case {
    const char* file;
    const char* preset;
  } cases[] = {{"hgx-h100-nccl1264.txt", "hgx-h200"},  {"dgx-a100.txt", "dgx-a100"},
               {"dgx1-volta.txt", "dgx1-volta"},       {"pcie4-nvbridge.txt", "pcie4-nvbridge"},
               {"pcie8-2socket.txt", "pcie8-2socket"}, {"pcie8-switch.txt", "pcie8-switch"}};
  for (const Case& c : cases) {
    std::string text = Read(c.file);
    ASSERT_FALSE(text.empty()) << c.file;
    auto parsed = ParseTopoMatrix(text, c.file);
    ASSERT_TRUE(parsed) << parsed.error().message();
    Topology preset = *Preset(c.preset);
    EXPECT_TRUE(SameMatrix(*parsed, preset)) << c.file << "\n" << FormatTopoMatrix(*parsed);
    // And the printed preset reads back to itself.
    auto again = ParseTopoMatrix(FormatTopoMatrix(preset), "printed");
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_TRUE(SameMatrix(*again, preset)) << c.preset;
  }
}

TEST(TopoMatrix, InfersWhatTheTextDoesNotSay) {
  auto t = ParseTopoMatrix(Read("dgx1-volta.txt"), "v");
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->Link(0, 3).via_nvswitch);  // 1+1+2+2 links: direct
  EXPECT_TRUE(t->Link(0, 3).pcie_inferred);
  EXPECT_EQ(t->Link(0, 3).pcie, PcieLevel::kNode);
  EXPECT_EQ(t->Link(0, 4).pcie, PcieLevel::kSystem);
  EXPECT_FALSE(t->Link(0, 5).pcie_inferred);
  auto a100 = ParseTopoMatrix(Read("dgx-a100.txt"), "a");
  ASSERT_TRUE(a100);
  EXPECT_TRUE(a100->Link(2, 5).via_nvswitch);  // 7 x 12 links: through NVSwitch
  EXPECT_EQ(a100->Gpu(4).numa_node, 7);
}

TEST(TopoMatrix, AcceptsColourCodesAndOldHeader) {
  std::string text =
      "\x1b[4m\tGPU0\tGPU1\tCPU Affinity\x1b[0m\n"
      "GPU0\t X \tCPU\t0-7\n"
      "GPU1\tCPU\t X \t0-7\n";
  auto t = ParseTopoMatrix(text, "old");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->Token(0, 1), "NODE");
  EXPECT_EQ(t->Gpu(0).numa_node, -1);
  EXPECT_EQ(t->Gpu(1).cpu_affinity, "0-7");
}

std::string ErrorOf(const std::string& text) {
  auto t = ParseTopoMatrix(text, "m.txt");
  return t ? "" : t.error().message();
}

TEST(TopoMatrix, RejectsRaggedRowNamingLineAndColumn) {
  EXPECT_EQ(ErrorOf("\tGPU0\tGPU1\tGPU2\tCPU Affinity\n"
                    "GPU0\t X \tSYS\tSYS\t0-7\n"
                    "GPU1\tSYS\t X \t0-7\n"
                    "GPU2\tSYS\tSYS\t X \t0-7\n"),
            "m.txt:3:14: row GPU1 has 2 link cells; the header has 3 columns");
  EXPECT_NE(ErrorOf("\tGPU0\tGPU1\n"
                    "GPU0\t X \tSYS\tSYS\n"
                    "GPU1\tSYS\t X \n")
                .find("m.txt:2:"),
            std::string::npos);
}

TEST(TopoMatrix, RejectsUnknownLinkToken) {
  EXPECT_EQ(ErrorOf("\tGPU0\tGPU1\tCPU Affinity\n"
                    "GPU0\t X \tNVL4\t0-7\n"
                    "GPU1\tNVL4\t X \t0-7\n"),
            "m.txt:2:10: unknown link token \"NVL4\" (known: X, NV#, PIX, PXB, PHB, NODE, SYS)");
}

TEST(TopoMatrix, RejectsAsymmetricMatrixNamingLineAndColumn) {
  EXPECT_EQ(ErrorOf("\tGPU0\tGPU1\tGPU2\tCPU Affinity\n"
                    "GPU0\t X \tNV2\tSYS\t0-7\n"
                    "GPU1\tNV2\t X \tPIX\t0-7\n"
                    "GPU2\tSYS\tNODE\t X \t0-7\n"),
            "m.txt:3:14: asymmetric matrix: GPU1->GPU2 is PIX but GPU2->GPU1 (line 4) is NODE");
}

TEST(TopoMatrix, RejectsOtherMalformedInput) {
  EXPECT_NE(ErrorOf("nothing here\n").find("no `nvidia-smi topo -m` header"), std::string::npos);
  EXPECT_NE(ErrorOf("\tGPU0\tGPU1\nGPU0\t X \tSYS\n").find("2 GPUs but 1 GPU rows"),
            std::string::npos);
  EXPECT_NE(ErrorOf("\tGPU0\tGPU1\nGPU0\tSYS\t X \nGPU1\t X \tSYS\n").find("m.txt:2:6"),
            std::string::npos);
  EXPECT_NE(ErrorOf("\tGPU0\tGPU1\nGPU1\t X \tSYS\n").find("out of order"), std::string::npos);
  EXPECT_NE(ErrorOf("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
                    "GPU0\t X \tSYS\t0-7\tzero\nGPU1\tSYS\t X \t0-7\t0\n")
                .find("NUMA affinity \"zero\""),
            std::string::npos);
}

}  // namespace
}  // namespace vgpu::topo
