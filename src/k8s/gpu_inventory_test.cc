#include "k8s/gpu_inventory.h"

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

}  // namespace
}  // namespace vgpu::k8s
