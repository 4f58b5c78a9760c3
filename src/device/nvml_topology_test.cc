// NvmlBackend::ReadTopology against the simulated NVML configured with each topology preset: the
// NVML calls (common ancestor, P2P, NVLink state, remote PCI and remote device type) round-trip
// to the same Topology, NVSwitch recognised through the remote device type.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "device/nvml_backend.h"
#include "support/temp_dir.h"
#include "topo/bandwidth.h"
#include "topo/presets.h"
#include "topo/topo_matrix.h"

namespace vgpu::device {
namespace {

#ifdef VGPU_SIM_NVML
namespace fs = std::filesystem;

Result<topo::Topology> ReadWith(const std::string& topology, const std::string& config_text) {
  vgpu::testing::TempDir tmp("vgpu-topo-test");
  if (!tmp.ok()) return Status::Internal(tmp.error());
  const fs::path dir = tmp.path();
  if (config_text.empty()) {
    unsetenv("VGPU_SIMGPU_CONFIG");
  } else {
    std::ofstream(dir / "devices.conf") << config_text;
    setenv("VGPU_SIMGPU_CONFIG", (dir / "devices.conf").c_str(), 1);
  }
  if (topology.empty()) {
    unsetenv("VGPU_SIMGPU_TOPOLOGY");
  } else {
    setenv("VGPU_SIMGPU_TOPOLOGY", topology.c_str(), 1);
  }
  unsetenv("VGPU_SIMGPU_DEVICES");
  setenv("VGPU_SIMGPU_STATE", (dir / "state").c_str(), 1);
  setenv("VGPU_SIMGPU_LOG_LEVEL", "1", 1);
  NvmlBackendOptions options;
  options.library_path = VGPU_SIM_NVML;
  options.cuda_library_path = "";
  options.sysfs_root = (dir / "sys").string();
  auto backend = NvmlBackend::Open(options);
  if (!backend) return backend.error();
  Result<topo::Topology> t = (*backend)->ReadTopology();
  backend->reset();
  return t;
}

TEST(NvmlTopologyTest, EveryPresetRoundTripsThroughTheSimulatedNvml) {
  for (const std::string& name : topo::PresetNames()) {
    topo::Topology preset = *topo::Preset(name);
    Result<topo::Topology> read = ReadWith(name, "");
    ASSERT_TRUE(read) << name << ": " << read.error().ToString();
    ASSERT_EQ(read->size(), preset.size()) << name;
    for (int a = 0; a < preset.size(); ++a) {
      EXPECT_EQ(read->Gpu(a).numa_node, preset.Gpu(a).numa_node) << name << " GPU" << a;
      for (int b = 0; b < preset.size(); ++b) {
        if (a != b) {
          EXPECT_EQ(read->Link(a, b), preset.Link(a, b)) << name << " GPU" << a << "-GPU" << b;
        }
      }
    }
  }
}

TEST(NvmlTopologyTest, ConfigLineTakesASavedTopoMatrix) {
  std::string path = fs::absolute("tests/topo/data/dgx1-volta.txt").string();
  std::string config = "topology=" + path + "\n";
  for (int i = 0; i < 8; ++i) config += "model=a100\n";
  Result<topo::Topology> read = ReadWith("", config);
  ASSERT_TRUE(read) << read.error().ToString();
  EXPECT_EQ(read->Token(0, 3), "NV2");
  EXPECT_EQ(read->Token(1, 4), "SYS");
  EXPECT_FALSE(read->Link(0, 3).via_nvswitch);
  topo::Topology preset = *topo::Preset("dgx1-volta");
  for (int g = 0; g < 8; ++g) preset.MutableGpu(g).cpu_affinity.clear();
  EXPECT_TRUE(topo::SameMatrix(*read, preset)) << topo::FormatTopoMatrix(*read);
}

// The PCIe link comes from nvmlDeviceGetMaxPcieLinkGeneration/Width: the topology's by default,
// a device's pcie_gen / pcie_width when configured, the slowest GPU's for the node.
TEST(NvmlTopologyTest, PcieGenerationAndWidthComeFromNvml) {
  Result<topo::Topology> volta = ReadWith("dgx1-volta", "");
  ASSERT_TRUE(volta) << volta.error().ToString();
  EXPECT_TRUE(volta->pcie_from_driver);
  EXPECT_EQ(volta->pcie_generation, topo::Preset("dgx1-volta")->pcie_generation);
  EXPECT_EQ(volta->pcie_width, 16);
  std::string config = "topology=pcie8-2socket\n";
  for (int i = 0; i < 8; ++i) config += i == 5 ? "pcie_gen=3 pcie_width=8\n" : "pcie_gen=5\n";
  Result<topo::Topology> slow = ReadWith("", config);
  ASSERT_TRUE(slow) << slow.error().ToString();
  EXPECT_EQ(slow->pcie_generation, 3);
  EXPECT_EQ(slow->pcie_width, 8);
  // The model: Gen3 is a quarter of Gen5, x8 half of x16 (SYS: 28 GB/s at Gen5 x16).
  topo::Evaluator ev(*slow);
  EXPECT_NEAR(ev.Pair(0, 4), 28.0 / 4 / 2, 1e-9);
}

TEST(NvmlTopologyTest, NoTopologyConfiguredIsUnavailable) {
  Result<topo::Topology> read = ReadWith("", "model=h100\nmodel=h100\n");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code(), StatusCode::kUnavailable);
}
#endif

}  // namespace
}  // namespace vgpu::device
