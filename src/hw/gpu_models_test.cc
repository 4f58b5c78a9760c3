#include "hw/gpu_models.h"

#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "hw/gpu_models_table.h"

namespace vgpu::hw {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// What NVML names identify: with or without the "NVIDIA " prefix, any case.
std::string Bare(std::string_view name) {
  std::string out = Lower(name);
  if (out.starts_with("nvidia ")) out = out.substr(7);
  return out;
}

static_assert(ModelOfKey("h100-80gb") != nullptr && ModelOfKey("h100-80gb")->sm_count == 132);
static_assert(ModelOfKey("H100-80GB") == nullptr, "compile-time lookups are case-sensitive");

TEST(GpuModels, KeysNamesIdsAndPresetsAreUnique) {
  std::set<std::string> keys, names, presets;
  std::set<uint32_t> ids;
  for (const GpuModel& m : AllGpuModels()) {
    SCOPED_TRACE(std::string(m.key));
    EXPECT_FALSE(m.key.empty());
    EXPECT_EQ(std::string(m.key), Lower(m.key)) << "keys are lower case";
    EXPECT_TRUE(keys.insert(std::string(m.key)).second);
    EXPECT_FALSE(m.display.empty());
    for (std::string_view n : m.nvml_names) EXPECT_TRUE(names.insert(Bare(n)).second) << n;
    for (uint32_t id : m.pci_device_ids) {
      EXPECT_TRUE(ids.insert(id).second) << std::hex << id;
      EXPECT_EQ(id & 0xFFFF, 0x10DEu) << "the vendor id in the low half";
    }
    if (m.sim != nullptr) {
      EXPECT_TRUE(presets.insert(std::string(m.sim->model)).second) << m.sim->model;
      EXPECT_TRUE(names.insert(Bare(m.sim->name)).second) << m.sim->name;
    }
  }
}

TEST(GpuModels, LookupsMatchExactlyOrRefuse) {
  for (const GpuModel& m : AllGpuModels()) {
    EXPECT_EQ(FindGpuModel(m.key), &m);
    std::string upper(m.key);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(FindGpuModel(upper), &m) << "keys are case-insensitive";
    EXPECT_EQ(ModelOfKey(m.key), &m);
    if (m.sim != nullptr) {
      EXPECT_EQ(FindSimPreset(m.sim->model), &m);
    }
  }
  for (std::string_view no : {"", "h100", "h100-80", "h100-80gb ", " h100-80gb", "a100",
                              "NVIDIA H100 80GB HBM3", "H100-80GB-x"}) {
    EXPECT_EQ(FindGpuModel(no), nullptr) << "'" << no << "'";
  }
  for (std::string_view no : {"", "H100", "h100-80gb", "h10", "h100 ", "v100"}) {
    EXPECT_EQ(FindSimPreset(no), nullptr) << "'" << no << "'";
  }
  EXPECT_EQ(FindSimPreset("h100")->key, "h100-80gb");
  EXPECT_EQ(FindSimPreset("h200")->key, "h200");
  EXPECT_EQ(FindSimPreset("a100")->key, "a100-80gb");
}

TEST(GpuModels, RecordedFiguresAreComplete) {
  for (const GpuModel& m : AllGpuModels()) {
    SCOPED_TRACE(std::string(m.key));
    if (!m.mig_table.empty()) {
      EXPECT_TRUE(m.mig_capable);
      EXPECT_FALSE(m.nvml_names.empty()) << "identification needs the NVML names";
      EXPECT_FALSE(m.pci_device_ids.empty());
    }
    if (m.estimate || !m.mig_table.empty()) {
      EXPECT_GT(m.memory_mib, 0);
      EXPECT_GT(m.sm_count, 0);
    }
    if (m.estimate_memory_mib != 0) {
      EXPECT_TRUE(m.estimate);
      EXPECT_NE(m.estimate_memory_mib, m.memory_mib) << "0 when they agree";
    }
    if (m.sim == nullptr) continue;
    EXPECT_GT(m.cc_major, 0);
    EXPECT_GT(m.clock_mhz, 0);
    EXPECT_GT(m.memory_clock_mhz, 0);
    EXPECT_GT(m.bus_width_bits, 0);
    EXPECT_GT(m.l2_mib, 0);
    EXPECT_GT(m.power_w, 0);
    EXPECT_GT(m.pcie_generation, 0);
    EXPECT_GT(m.sim->host_link_bytes_per_s, 0u);
    EXPECT_NE(m.SimPciDeviceId(), 0u);
    EXPECT_NE(m.sim->memory_mib, m.memory_mib) << "0 when they agree";
    // The preset's name is the simulated GPU's default: its label and memory in whole GiB.
    const int64_t gib = (m.SimMemoryMib() + 512) / 1024;
    EXPECT_EQ(m.sim->name,
              "vgpu simulated " + std::string(m.sim->label) + " (" + std::to_string(gib) + " GiB)");
  }
}

TEST(GpuModels, TheFiguresThatDifferBetweenUsersAreNamedApart) {
  const GpuModel* a100 = FindGpuModel("a100-40gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->memory_mib, 40536);           // NVML's total (MIG identification)
  EXPECT_EQ(a100->EstimateMemoryMib(), 40960);  // the estimator's 40 GiB
  const GpuModel* h100 = FindGpuModel("h100-80gb");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->memory_mib, 81559);
  EXPECT_EQ(h100->EstimateMemoryMib(), 81559);
  EXPECT_EQ(h100->SimMemoryMib(), 81920);  // the simulated H100's round 80 GiB
  EXPECT_EQ(FindGpuModel("h200")->SimMemoryMib(), 143771);
}

}  // namespace
}  // namespace vgpu::hw
