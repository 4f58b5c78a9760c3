// `vgpu topo`: the preset, --from a saved nvidia-smi topo -m output, --sim against the simulated
// NVML, --json, and exit code 2 with file:line:column for malformed input.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "support/run_command.h"
#include "support/temp_dir.h"
#include "topo/presets.h"
#include "topo/topo_matrix.h"

namespace {

using vgpu::testing::RunCommand;
const std::string kVgpu = VGPU_BIN;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TopoCli, PresetPrintsTheNvidiaSmiMatrix) {
  auto r = RunCommand(kVgpu + " topo --preset hgx-h200");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, Read("tests/topo/data/hgx-h200.golden"));
  r = RunCommand(kVgpu + " topo --list-presets");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("pcie8-switch"), std::string::npos);
  EXPECT_EQ(RunCommand(kVgpu + " topo --help").exit_code, 0);
}

TEST(TopoCli, FromSavedOutputAndJson) {
  auto r = RunCommand(kVgpu + " topo --from tests/topo/data/hgx-h100-nccl1264.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, Read("tests/topo/data/hgx-h200.golden"));  // the same board shape
  r = RunCommand(kVgpu + " topo --json --from tests/topo/data/dgx1-volta.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("{\"a\":0,\"b\":3,\"token\":\"NV2\",\"nvlinks\":2,\"nvswitch\":false"),
            std::string::npos)
      << r.out;
}

TEST(TopoCli, BadInputExitsTwoNamingWhere) {
  vgpu::testing::TempDir tmp("vgpu-topo-cli");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string dir = tmp.path();
  std::ofstream(dir + "/ragged.txt") << "\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU1\t X \n";
  std::ofstream(dir + "/asym.txt") << "\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tSYS\t X \n";
  auto r = RunCommand(kVgpu + " topo --from " + dir + "/ragged.txt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir + "/ragged.txt:3:"), std::string::npos) << r.err;
  r = RunCommand(kVgpu + " topo --from " + dir + "/asym.txt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("asym.txt:2:10: asymmetric matrix"), std::string::npos) << r.err;
  r = RunCommand(kVgpu + " topo --from " + dir + "/missing.txt");
  EXPECT_EQ(r.exit_code, 2);
  r = RunCommand(kVgpu + " topo --preset dgx-9");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--preset \"dgx-9\": unknown"), std::string::npos) << r.err;
  EXPECT_EQ(RunCommand(kVgpu + " topo --preset dgx2 --from x").exit_code, 2);
}

TEST(TopoCli, SimulatedGpuAnswersFromItsTopology) {
  vgpu::testing::TempDir tmp("vgpu-topo-cli-sim");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string state = tmp.path() + "/simgpu.state";
  std::string env = "VGPU_SIMGPU_STATE=" + state + " VGPU_SIMGPU_LOG_LEVEL=1 ";
  auto r = RunCommand("env -u VGPU_SIMGPU_CONFIG -u VGPU_SIMGPU_DEVICES " + env +
                      "VGPU_SIMGPU_TOPOLOGY=pcie4-nvbridge " + kVgpu + " topo --sim");
  if (r.exit_code != 0 && r.err.find("simulated GPU") != std::string::npos &&
      r.err.find("build") != std::string::npos) {
    GTEST_SKIP() << "simulated GPU not built: " << r.err;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  vgpu::topo::Topology preset = *vgpu::topo::Preset("pcie4-nvbridge");
  for (int g = 0; g < preset.size(); ++g) preset.MutableGpu(g).cpu_affinity.clear();
  EXPECT_EQ(r.out, vgpu::topo::FormatTopoMatrix(preset));
  r = RunCommand("env -u VGPU_SIMGPU_CONFIG -u VGPU_SIMGPU_TOPOLOGY " + env +
                 "VGPU_SIMGPU_DEVICES=2 " + kVgpu + " topo --sim");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("VGPU_SIMGPU_TOPOLOGY"), std::string::npos) << r.err;
}

}  // namespace
