#include "k8s/wire/gpu_inventory.h"

#include <gtest/gtest.h>

namespace vgpu::k8s {
namespace {

NodeInventory TwoGpus() {
  NodeInventory inv;
  inv.gpus.push_back({"GPU-b", 1, "NVIDIA A100-SXM4-80GB", 81920, 10, false, 1, {"GPU-a"}});
  inv.gpus.push_back({"GPU-a", 0, "NVIDIA A100-SXM4-80GB", 81920, 10, true, 0, {"GPU-b"}});
  return inv;
}

TEST(GpuInventory, FormatIsCanonicalAndRoundTrips) {
  const std::string text = FormatInventory(TwoGpus());
  EXPECT_EQ(text.rfind(R"({"version":1,"gpus":[{"uuid":"GPU-a","index":0,)", 0), 0u) << text;
  auto back = ParseInventory(text);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  ASSERT_EQ(back->gpus.size(), 2u);
  EXPECT_EQ(back->gpus[0].uuid, "GPU-a");  // sorted by index
  EXPECT_FALSE(back->gpus[1].healthy);
  EXPECT_EQ(back->gpus[1].nvlink_peers, std::vector<std::string>{"GPU-a"});
  EXPECT_EQ(FormatInventory(*back), text);
}

TEST(GpuInventory, DefaultsAndUnknownFields) {
  auto inv = ParseInventory(
      R"({"version":1,"future":true,"gpus":[{"uuid":"u","index":3,"model":"T4","memory_mib":15360,"x":1}]})");
  ASSERT_TRUE(inv.has_value()) << inv.error().ToString();
  EXPECT_EQ(inv->gpus[0].units, 10);
  EXPECT_EQ(inv->gpus[0].numa, -1);
  EXPECT_TRUE(inv->gpus[0].healthy);
}

TEST(GpuInventory, ErrorsNameTheField) {
  const auto err = [](const char* text) {
    auto r = ParseInventory(text);
    EXPECT_FALSE(r.has_value()) << text;
    return r ? std::string() : r.error().message();
  };
  EXPECT_EQ(err("{"), "not valid JSON");
  EXPECT_NE(err(R"({"version":2,"gpus":[]})").find("version 2 is not supported"),
            std::string::npos);
  EXPECT_EQ(err(R"({"version":1,"gpus":[{"uuid":"u","index":0,"model":"T4","memory_mib":0}]})"),
            "gpus[0].memory_mib: must be a positive integer");
  EXPECT_EQ(
      err(R"({"version":1,"gpus":[{"uuid":"u","index":0,"model":"T4","memory_mib":1,"health":"ok"}]})"),
      "gpus[0].health: must be \"healthy\" or \"unhealthy\"");
  EXPECT_NE(
      err(R"({"version":1,"gpus":[{"uuid":"u","index":0,"model":"T","memory_mib":1},{"uuid":"u","index":1,"model":"T","memory_mib":1}]})")
          .find("GPU u appears twice"),
      std::string::npos);
  EXPECT_NE(err(R"({"version":1,"gpus":[{"uuid":"u","index":99,"model":"T","memory_mib":1}]})")
                .find("gpus[0].index: 99 is outside 0..63"),
            std::string::npos);
}

TEST(GpuInventory, ReadsHamiRegisterJsonAndLegacy) {
  auto json = ParseHamiRegister(
      R"([{"id":"GPU-1","index":1,"count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-NVIDIA GeForce RTX 4090","numa":0,"mode":"hami-core","health":true},
          {"id":"GPU-0","index":0,"count":5,"devmem":24576,"devcore":100,"type":"NVIDIA-NVIDIA GeForce RTX 4090","numa":0,"health":false}])");
  ASSERT_TRUE(json.has_value()) << json.error().ToString();
  ASSERT_EQ(json->gpus.size(), 2u);
  EXPECT_EQ(json->gpus[0].uuid, "GPU-0");
  EXPECT_EQ(json->gpus[0].units, 5);
  EXPECT_FALSE(json->gpus[0].healthy);
  EXPECT_EQ(json->gpus[1].model, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(json->source, InventorySource::kHami);

  auto legacy = ParseHamiRegister(
      "GPU-x,10,16384,100,NVIDIA-Tesla T4,0,true:GPU-y,10,16384,100,"
      "NVIDIA-Tesla T4,1,false,1,hami-core:");
  ASSERT_TRUE(legacy.has_value()) << legacy.error().ToString();
  ASSERT_EQ(legacy->gpus.size(), 2u);
  EXPECT_EQ(legacy->gpus[1].index, 1);
  EXPECT_EQ(legacy->gpus[1].numa, 1);
  EXPECT_FALSE(legacy->gpus[1].healthy);
  EXPECT_FALSE(ParseHamiRegister("GPU-x,ten,1,1,T,0,true:").has_value());
}

TEST(GpuInventory, NodeAnnotationPreference) {
  Json node = {{"metadata",
                {{"name", "n1"},
                 {"annotations",
                  {{kHamiRegisterAnnotation, R"([{"id":"H","count":10,"devmem":100,"type":"T"}])"},
                   {kInventoryAnnotation, FormatInventory(TwoGpus())}}}}}};
  auto inv = InventoryOfNode(node);
  ASSERT_TRUE(inv.has_value());
  ASSERT_TRUE(inv->has_value());
  EXPECT_EQ((*inv)->source, InventorySource::kVgpu);
  node["metadata"]["annotations"][kInventoryAnnotation] = "{bad";
  auto bad = InventoryOfNode(node);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("node n1: annotation vgpu.io/gpu-inventory"),
            std::string::npos);
  node["metadata"]["annotations"].erase(kInventoryAnnotation);
  EXPECT_EQ((*InventoryOfNode(node))->source, InventorySource::kHami);
  node["metadata"]["annotations"] = Json::object();
  EXPECT_FALSE(InventoryOfNode(node)->has_value());
}

TEST(GpuInventory, MigModeAndInstancesRoundTrip) {
  NodeInventory inv;
  InventoryGpu g{"GPU-h", 0, "NVIDIA H200", 143771, 10, true, 0, {}};
  g.mode = GpuMode::kMig;
  g.mig = {{"3g.71gb", 0, "MIG-a", 9}, {"1g.18gb", 4, "MIG-b", -1}};
  inv.gpus.push_back(g);
  InventoryGpu plain{"GPU-p", 1, "NVIDIA H200", 143771, 10, true, 0, {}};
  inv.gpus.push_back(plain);
  const std::string text = FormatInventory(inv);
  EXPECT_NE(
      text.find(
          R"("mode":"mig","mig":[{"profile":"3g.71gb","start":0,"uuid":"MIG-a","profile_id":9},{"profile":"1g.18gb","start":4,"uuid":"MIG-b"}])"),
      std::string::npos)
      << text;
  // A shared GPU without instances keeps today's text: no mode, no mig.
  EXPECT_EQ(text.find("\"mode\"", text.find("GPU-p")), std::string::npos) << text;
  auto back = ParseInventory(text);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, inv);
  EXPECT_EQ(back->gpus[1].mode, GpuMode::kShared);
  for (GpuMode m :
       {GpuMode::kShared, GpuMode::kWhole, GpuMode::kMig, GpuMode::kMigDynamic, GpuMode::kMps}) {
    EXPECT_EQ(ParseGpuMode(GpuModeName(m)), m);
  }
  EXPECT_EQ(ParseGpuMode("MIG"), std::nullopt);
}

TEST(GpuInventory, MigErrorsNameTheInstance) {
  const auto err = [](const std::string& gpu_fields) {
    const std::string text =
        R"({"version":1,"gpus":[{"uuid":"u","index":0,"model":"NVIDIA H200","memory_mib":143771,)" +
        gpu_fields + "}]}";
    auto r = ParseInventory(text);
    EXPECT_FALSE(r.has_value()) << text;
    return r ? std::string() : r.error().message();
  };
  EXPECT_NE(err(R"("mode":"exclusive")").find("gpus[0].mode: must be"), std::string::npos);
  EXPECT_NE(err(R"("mode":3)").find("gpus[0].mode"), std::string::npos);
  EXPECT_NE(err(R"("mig":[{"profile":"1g.18gb","start":0,"uuid":"M"}])")
                .find("gpus[0].mig: MIG instances on a GPU whose mode is \"shared\""),
            std::string::npos);
  EXPECT_NE(err(R"("mode":"mig","mig":[{"profile":"1g.18gb","start":9,"uuid":"M"}])")
                .find("gpus[0].mig[0].start"),
            std::string::npos);
  EXPECT_NE(
      err(R"("mode":"mig","mig":[{"profile":"1g.18gb","start":1}])").find("gpus[0].mig[0].uuid"),
      std::string::npos);
  EXPECT_NE(err(R"("mode":"mig","mig":[{"profile":"1g.10gb","start":0,"uuid":"M"}])")
                .find("H200 has no MIG profile 1g.10gb"),
            std::string::npos);
  const std::string overlap = err(
      R"("mode":"mig","mig":[{"profile":"3g.71gb","start":0,"uuid":"A"},{"profile":"2g.35gb","start":2,"uuid":"B"}])");
  EXPECT_NE(overlap.find("2g.35gb@2 overlaps 3g.71gb@0 on memory slices 2-3"), std::string::npos)
      << overlap;
  EXPECT_NE(
      err(R"("mode":"mig-dynamic","mig":[{"profile":"3g.71gb","start":0,"uuid":"A","profile_id":5}])")
          .find("has NVML id 9"),
      std::string::npos);
  EXPECT_NE(
      err(R"("mode":"mig","mig":[{"profile":"1g.18gb","start":0,"uuid":"A"},{"profile":"1g.18gb","start":1,"uuid":"A"}])")
          .find("appears twice"),
      std::string::npos);
}

TEST(GpuInventory, MigOnAModelWithoutTableIsKeptAsGiven) {
  auto inv = ParseInventory(
      R"({"version":1,"gpus":[{"uuid":"u","index":0,"model":"NVIDIA B200","memory_mib":1000,"mode":"mig","mig":[{"profile":"1g.23gb","start":0,"uuid":"M"}]}]})");
  ASSERT_TRUE(inv.has_value()) << inv.error().ToString();
  EXPECT_EQ(inv->gpus[0].mig.size(), 1u);
}

}  // namespace
}  // namespace vgpu::k8s
