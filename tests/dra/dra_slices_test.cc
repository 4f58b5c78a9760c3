// The driver's ResourceSlices against the API's shapes and limits (slice_rules.h) and a golden
// copy, and claims allocated from them by the structured-parameters rules.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "dra/driver.h"
#include "dra/gpu_offers.h"
#include "dra/resource_slices.h"
#include "slice_rules.h"

namespace vgpu::dra {
namespace {

using nlohmann::json;
using testing::TestAllocator;
using testing::TestRequest;
using testing::ValidateResourceSlices;

// A GPU as NVML names it, with its total memory.
device::DeviceInfo Named(const std::string& name, uint64_t memory_mib) {
  device::DeviceInfo d;
  d.name = name;
  d.memory_total_bytes = memory_mib << 20;
  return d;
}

std::vector<SliceGpu> Gpus(int n, const std::string& model = "NVIDIA H100 80GB HBM3") {
  std::vector<SliceGpu> out;
  for (int i = 0; i < n; ++i) {
    SliceGpu g;
    g.info.index = i;
    char uuid[64];
    std::snprintf(uuid, sizeof(uuid), "GPU-00000000-0000-0000-0000-%012d", i);
    g.info.uuid = uuid;
    g.info.name = model;
    g.info.memory_total_bytes = 80ULL << 30;
    g.info.sm_count = 132;
    g.info.numa_node = i / 4;
    g.driver_version = "550.54.15";
    g.pcie_root = "pci0000:" + std::to_string(10 + i / 2);
    FillFromProductName(&g);
    out.push_back(g);
  }
  return out;
}

// GPU 0 shared (software slices), GPU 1 a static MIG layout (4g.40gb@0 and 3g.40gb@4, and a
// half-made instance that is no device), GPU 2 mig-dynamic with two of its profiles (every
// placement of 3g.40gb and 7g.80gb, and the software device).
std::vector<SliceGpu> GoldenGpus() {
  std::vector<SliceGpu> gpus = Gpus(3);
  gpus[1].software = false;
  gpus[1].mig_devices = StaticMigDevices({
      {1, "MIG-11111111-2222-3333-4444-000000000004", 2, 0, 9, "3g.40gb", 4, 4, 40448ULL << 20, 60},
      {1, "", 3, -1, 19, "1g.10gb", 3, 1, 9856ULL << 20, 16},
      {1, "MIG-11111111-2222-3333-4444-000000000000", 1, 0, 5, "4g.40gb", 0, 4, 40448ULL << 20, 64},
  });
  std::vector<device::MigProfileInfo> two;
  for (const device::MigProfileInfo& p : TableMigProfiles(gpus[2].info)) {
    if (p.name == "3g.40gb" || p.name == "7g.80gb") two.push_back(p);
  }
  gpus[2].mig_devices = DynamicMigDevices(two);
  return gpus;
}

TEST(ResourceSlices, MatchTheGoldenCopyAndTheApiRules) {
  const std::vector<json> slices = BuildResourceSlices("node-a", kDriverName, GoldenGpus(), 3);
  EXPECT_EQ(ValidateResourceSlices(slices), std::vector<std::string>{});
  const std::string golden_path = std::string(VGPU_DRA_DATA) + "/resource_slices_golden.json";
  const std::string text = json(slices).dump(2) + "\n";
  if (std::getenv("VGPU_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden_path) << text;
  }
  std::ifstream in(golden_path);
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(text, golden.str()) << "regenerate with VGPU_UPDATE_GOLDEN=1 after checking the diff";
  std::vector<std::string> names;
  for (const json& d : slices.back()["spec"]["devices"]) names.push_back(d["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"gpu-0", "gpu-1-mig-4g-40gb-0", "gpu-1-mig-3g-40gb-4",
                                             "gpu-2", "gpu-2-mig-3g-40gb-0", "gpu-2-mig-3g-40gb-4",
                                             "gpu-2-mig-7g-80gb-0"}));
}

TEST(ResourceSlices, StayWithinLimitsOnLargeNodes) {
  for (int n : {1, 8, 9, 16, 65}) {
    const std::vector<json> slices = BuildResourceSlices("node-b", kDriverName, Gpus(n), 1);
    EXPECT_EQ(ValidateResourceSlices(slices), std::vector<std::string>{}) << n << " GPUs";
    int devices = 0;
    for (const json& s : slices) devices += s["spec"].value("devices", json::array()).size();
    EXPECT_EQ(devices, n);
  }
  // mig-dynamic H200s: every placement of every profile (25) and the software device per GPU.
  for (int n : {1, 3, 4, 8, 16}) {
    std::vector<SliceGpu> gpus = Gpus(n, "NVIDIA H200");
    for (SliceGpu& g : gpus) {
      g.info.memory_total_bytes = 143771ULL << 20;  // what NVML reports for an H200
      g.mig_devices = DynamicMigDevices(TableMigProfiles(g.info));
    }
    ASSERT_EQ(gpus[0].mig_devices.size(), 25u);
    const std::vector<json> slices = BuildResourceSlices("node-m", kDriverName, gpus, 1);
    EXPECT_EQ(ValidateResourceSlices(slices), std::vector<std::string>{}) << n << " H200s";
    int devices = 0;
    for (const json& s : slices) devices += s["spec"].value("devices", json::array()).size();
    EXPECT_EQ(devices, n * 26);
  }
}

TEST(GpuOffers, StaticAndDynamicMigDevices) {
  // Half-made instances (no compute instance) are no device; the rest by start.
  const std::vector<MigDeviceSpec> fixed = StaticMigDevices({
      {0, "MIG-b", 2, 0, 9, "3g.71gb", 4, 4, 71168ULL << 20, 60},
      {0, "", 3, -1, 19, "1g.18gb", 2, 1, 16384ULL << 20, 16},
      {0, "MIG-a", 1, 0, 19, "1g.18gb", 0, 1, 16384ULL << 20, 16},
  });
  ASSERT_EQ(fixed.size(), 2u);
  EXPECT_EQ(fixed[0].uuid, "MIG-a");
  EXPECT_EQ(fixed[1].profile, "3g.71gb");
  EXPECT_EQ(fixed[1].memory_slices, 4);
  EXPECT_EQ(fixed[1].profile_id, 9);
  // H200: 7 + 7 + 4 + 3 + 2 + 1 + 1 placements.
  const std::vector<MigDeviceSpec> all =
      DynamicMigDevices(TableMigProfiles(Named("NVIDIA H200", 143771)));
  ASSERT_EQ(all.size(), 25u);
  std::map<std::string, int> per_profile;
  for (const MigDeviceSpec& m : all) ++per_profile[m.profile];
  EXPECT_EQ(per_profile, (std::map<std::string, int>{{"1g.18gb", 7},
                                                     {"1g.18gb+me", 7},
                                                     {"1g.35gb", 4},
                                                     {"2g.35gb", 3},
                                                     {"3g.71gb", 2},
                                                     {"4g.71gb", 1},
                                                     {"7g.141gb", 1}}));
  EXPECT_EQ(MigDeviceName(0, all.back()), "gpu-0-mig-7g-141gb-0");
  EXPECT_TRUE(TableMigProfiles(Named("NVIDIA L4", 23034)).empty());
  // Only the exact model's table: the GH200 480GB has its own, the 144G none.
  EXPECT_EQ(TableMigProfiles(Named("NVIDIA GH200 480GB", 97871)).front().name, "1g.12gb");
  EXPECT_TRUE(TableMigProfiles(Named("NVIDIA GH200 144G HBM3e", 146944)).empty());
}

TEST(ResourceSlices, LeaveOutUnhealthyGpusAndNonMigCounters) {
  auto gpus = Gpus(2, "NVIDIA L4");
  gpus[1].healthy = false;
  const std::vector<json> slices = BuildResourceSlices("node-c", kDriverName, gpus, 1);
  EXPECT_EQ(ValidateResourceSlices(slices), std::vector<std::string>{});
  const json& devices = slices.back()["spec"]["devices"];
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0]["name"], "gpu-0");
  EXPECT_FALSE(slices[0]["spec"]["sharedCounters"][0]["counters"].contains("memory-slice-0"));
  EXPECT_EQ(devices[0]["attributes"]["cudaComputeCapability"]["version"], "8.9.0");
}

TEST(ResourceSlices, ValidatorCatchesBrokenSlices) {
  std::vector<json> slices = BuildResourceSlices("node-a", kDriverName, Gpus(1), 1);
  slices.back()["spec"]["devices"][0]["attributes"]["bad name"] = {{"string", "x"}};
  slices.back()["spec"]["devices"][0]["capacity"]["cores"]["requestPolicy"]["default"] = "101";
  slices[0]["spec"]["pool"]["generation"] = 2;
  EXPECT_EQ(ValidateResourceSlices(slices).size(), 3u);
}

TEST(ResourceSlices, VersionsAreSemantic) {
  EXPECT_EQ(SemVer("9.0"), "9.0.0");
  EXPECT_EQ(SemVer("550.54.03"), "550.54.3");
  EXPECT_EQ(SemVer("abc"), "");
  EXPECT_EQ(DriverVersionOf("NVML 12.550.54 (driver 550.54.15)"), "550.54.15");
}

TEST(TestAllocatorOnSlices, ConsumableCapacityIsSummedAndRounded) {
  TestAllocator a(kDriverName, BuildResourceSlices("n", kDriverName, Gpus(1), 1));
  std::string why;
  // 4 GiB + 1 byte rounds up to the next MiB step.
  auto c1 = a.Allocate({"ns",
                        "c1",
                        "u1",
                        "gpu",
                        "type",
                        "gpu",
                        {{"memory", std::to_string((4LL << 30) + 1)}, {"cores", "30"}}},
                       &why);
  ASSERT_TRUE(c1) << why;
  const json& r = (*c1)["status"]["allocation"]["devices"]["results"][0];
  EXPECT_EQ(r["consumedCapacity"]["memory"], std::to_string((4LL << 30) + (1 << 20)));
  EXPECT_EQ(r["consumedCapacity"]["cores"], "30");
  EXPECT_TRUE(r.contains("shareID"));
  // 70 % of the cores are left: 70 fits, then nothing.
  ASSERT_TRUE(a.Allocate(
      {"ns", "c2", "u2", "gpu", "type", "gpu", {{"memory", "1Gi"}, {"cores", "70"}}}, &why));
  EXPECT_FALSE(a.Allocate(
      {"ns", "c3", "u3", "gpu", "type", "gpu", {{"memory", "1Gi"}, {"cores", "1"}}}, &why));
  // A claim that names no cores takes the default: all of them.
  a.Release("u2");
  EXPECT_FALSE(a.Allocate({"ns", "c4", "u4", "gpu", "type", "gpu", {{"memory", "1Gi"}}}, &why));
  ASSERT_TRUE(a.Allocate(
      {"ns", "c5", "u5", "gpu", "type", "gpu", {{"memory", "1Gi"}, {"cores", "70"}}}, &why));
  EXPECT_FALSE(a.Allocate({"ns", "c6", "u6", "gpu", "type", "gpu", {{"cores", "101"}}}, &why));
}

}  // namespace
}  // namespace vgpu::dra

namespace vgpu::dra {
namespace {

// A mig-dynamic H100 80GB: the software device and every MIG placement (25).
SliceGpu H100WithMig() {
  SliceGpu g = Gpus(1)[0];
  g.mig_devices = DynamicMigDevices(TableMigProfiles(g.info));
  return g;
}

TEST(MigDevices, ArePublishedWithinTheRulesAndConsumeTheirPlacement) {
  const std::vector<json> slices = BuildResourceSlices("n", kDriverName, {H100WithMig()}, 1);
  EXPECT_EQ(ValidateResourceSlices(slices), std::vector<std::string>{});
  const json& devices = slices.back()["spec"]["devices"];
  ASSERT_EQ(devices.size(), 26u);
  const json& mig = devices[3];  // 1g.10gb at start 2
  EXPECT_EQ(mig["name"], "gpu-0-mig-1g-10gb-2");
  EXPECT_EQ(mig["attributes"]["placementStart"]["int"], 2);
  EXPECT_EQ(mig["attributes"]["placementSize"]["int"], 1);
  EXPECT_EQ(mig["attributes"]["productName"]["string"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(mig["attributes"]["type"]["string"], "mig");
  EXPECT_EQ(mig["attributes"]["profile"]["string"], "1g.10gb");
  EXPECT_EQ(mig["attributes"]["parentUUID"]["string"], Gpus(1)[0].info.uuid);
  EXPECT_FALSE(mig.contains("allowMultipleAllocations"));
  const json& counters = mig["consumesCounters"][0]["counters"];
  EXPECT_TRUE(counters.contains("memory-slice-2"));
  EXPECT_FALSE(counters.contains("memory-slice-1"));
  EXPECT_FALSE(counters.contains("memory-slice-3"));
}

// A GPU with a MIG device allocated offers no software capacity, and the reverse; MIG devices
// of different placements mix.
TEST(MigDevices, AndSoftwareSlicesExcludeEachOtherPerGpu) {
  const std::vector<json> slices = BuildResourceSlices("n", kDriverName, {H100WithMig()}, 1);
  std::string why;
  {
    TestAllocator a(kDriverName, slices);
    ASSERT_TRUE(a.Allocate(
        {"ns", "s", "u-s", "gpu", "type", "gpu", {{"memory", "1Gi"}, {"cores", "10"}}}, &why));
    EXPECT_FALSE(a.Allocate({"ns", "m", "u-m", "gpu", "type", "mig", {}}, &why));
    EXPECT_NE(why.find("counters"), std::string::npos) << why;
    EXPECT_FALSE(
        a.Allocate({"ns", "m", "u-m", "gpu", "type", "mig", {}, {{"profile", "7g.80gb"}}}, &why));
    // A second software slice still fits: the whole-GPU device consumed the counters once.
    EXPECT_TRUE(a.Allocate(
        {"ns", "s2", "u-s2", "gpu", "type", "gpu", {{"memory", "1Gi"}, {"cores", "10"}}}, &why));
    a.Release("u-s");
    a.Release("u-s2");
    EXPECT_TRUE(a.Allocate({"ns", "m", "u-m", "gpu", "type", "mig", {}}, &why)) << why;
  }
  TestAllocator a(kDriverName, slices);
  auto m1 = a.Allocate({"ns", "m1", "u-m1", "gpu", "type", "mig", {}}, &why);
  ASSERT_TRUE(m1) << why;
  EXPECT_EQ(m1->at("status")["allocation"]["devices"]["results"][0]["device"],
            "gpu-0-mig-1g-10gb-0");
  EXPECT_FALSE(a.Allocate(
      {"ns", "s", "u-s", "gpu", "type", "gpu", {{"memory", "1Gi"}, {"cores", "10"}}}, &why));
  auto m2 = a.Allocate({"ns", "m2", "u-m2", "gpu", "type", "mig", {}}, &why);
  ASSERT_TRUE(m2) << why;
  EXPECT_EQ(m2->at("status")["allocation"]["devices"]["results"][0]["device"],
            "gpu-0-mig-1g-10gb-1");
}

}  // namespace
}  // namespace vgpu::dra

namespace vgpu::dra {
namespace {

// Kubernetes 1.34 takes a device's counter sets only from the device's own slice (at most 32
// counters in all of a slice's sets); 1.35 refuses a slice with both devices and counter sets.
// Each layout passes the rules of its release and breaks the other's.
TEST(SliceLayouts, EachReleaseGetsALayoutItAccepts) {
  const std::vector<SliceGpu> gpus = GoldenGpus();
  const auto apart =
      BuildResourceSlices("node-a", kDriverName, gpus, 1, SliceLayout::kCountersApart);
  const auto with =
      BuildResourceSlices("node-a", kDriverName, gpus, 1, SliceLayout::kCountersWithDevices);
  EXPECT_EQ(ValidateResourceSlices(apart, 35), std::vector<std::string>{});
  EXPECT_EQ(ValidateResourceSlices(with, 34), std::vector<std::string>{});
  EXPECT_NE(ValidateResourceSlices(apart, 34), std::vector<std::string>{});
  EXPECT_NE(ValidateResourceSlices(with, 35), std::vector<std::string>{});
  // 1.34: the three MIG-capable GPUs' 30 counters and their 7 devices in one slice.
  ASSERT_EQ(with.size(), 1u);
  EXPECT_EQ(with[0]["metadata"]["name"], "node-a-gpu.vgpu.io-0");
  EXPECT_EQ(with[0]["spec"]["sharedCounters"].size(), 3u);
  EXPECT_EQ(with[0]["spec"]["devices"].size(), 7u);
  // The same devices in both layouts.
  const auto names = [](const std::vector<json>& slices) {
    std::vector<std::string> out;
    for (const json& s : slices) {
      for (const json& d : s["spec"].value("devices", json::array())) out.push_back(d["name"]);
    }
    return out;
  };
  EXPECT_EQ(names(apart), names(with));
}

TEST(SliceLayouts, The134LayoutStaysWithinItsLimitsOnLargeNodes) {
  for (int n : {1, 3, 4, 16, 65}) {
    const auto slices = BuildResourceSlices("node-b", kDriverName, Gpus(n, "NVIDIA L4"), 1,
                                            SliceLayout::kCountersWithDevices);
    EXPECT_EQ(ValidateResourceSlices(slices, 34), std::vector<std::string>{}) << n << " L4s";
    EXPECT_EQ(slices.size(), static_cast<size_t>((n + 15) / 16)) << n << " L4s";  // 2 counters each
  }
  for (int n : {1, 3, 4, 16}) {
    std::vector<SliceGpu> gpus = Gpus(n, "NVIDIA H200");
    for (SliceGpu& g : gpus) {
      g.info.memory_total_bytes = 143771ULL << 20;
      g.mig_devices = DynamicMigDevices(TableMigProfiles(g.info));
    }
    const auto slices =
        BuildResourceSlices("node-m", kDriverName, gpus, 1, SliceLayout::kCountersWithDevices);
    EXPECT_EQ(ValidateResourceSlices(slices, 34), std::vector<std::string>{}) << n << " H200s";
    EXPECT_EQ(slices.size(), static_cast<size_t>((n + 2) / 3)) << n << " H200s";  // 10 each
    int devices = 0;
    for (const json& s : slices) devices += s["spec"].value("devices", json::array()).size();
    EXPECT_EQ(devices, n * 26);
  }
}

// On the 1.34 layout MIG devices and software slices of a GPU still exclude each other.
TEST(SliceLayouts, The134LayoutKeepsMigAndSoftwareApart) {
  const auto slices =
      BuildResourceSlices("n", kDriverName, {H100WithMig()}, 1, SliceLayout::kCountersWithDevices);
  TestAllocator a(kDriverName, slices);
  std::string why;
  ASSERT_TRUE(a.Allocate({"ns", "m", "u-m", "gpu", "type", "mig", {}}, &why)) << why;
  EXPECT_FALSE(a.Allocate(
      {"ns", "s", "u-s", "gpu", "type", "gpu", {{"memory", "1Gi"}, {"cores", "10"}}}, &why));
}

TEST(SliceLayouts, FollowTheApiServersVersion) {
  const auto of = [](const json& v) { return SliceLayoutForVersion(v); };
  EXPECT_EQ(*of({{"major", "1"}, {"minor", "34"}}), SliceLayout::kCountersWithDevices);
  EXPECT_EQ(*of({{"major", "1"}, {"minor", "35"}}), SliceLayout::kCountersApart);
  EXPECT_EQ(*of({{"major", "1"}, {"minor", "36+"}}), SliceLayout::kCountersApart);
  EXPECT_EQ(*of({{"major", "1"}, {"minor", "34+"}}), SliceLayout::kCountersWithDevices);
  EXPECT_EQ(of({{"major", "1"}, {"minor", "33"}}).error().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(of({{"gitVersion", "v1.35.0"}}).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SliceLayoutName(SliceLayout::kCountersWithDevices), "1.34");
  EXPECT_EQ(SliceLayoutName(SliceLayout::kCountersApart), "1.35");
}

}  // namespace
}  // namespace vgpu::dra
