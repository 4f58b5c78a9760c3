#include "dra/claim.h"

#include <gtest/gtest.h>

namespace vgpu::dra {
namespace {

using nlohmann::json;

json Claim() {
  return json::parse(R"({
    "metadata": {"namespace": "ns", "name": "c", "uid": "u1"},
    "status": {"allocation": {"devices": {
      "results": [
        {"request": "gpu", "driver": "gpu.vgpu.io", "pool": "n1", "device": "gpu-0",
         "shareID": "s1", "consumedCapacity": {"memory": "4Gi", "cores": "30"}},
        {"request": "nic", "driver": "other.io", "pool": "n1", "device": "x"}],
      "config": [
        {"source": "FromClaim", "requests": ["gpu"],
         "opaque": {"driver": "gpu.vgpu.io", "parameters": {"priority": "low"}}},
        {"source": "FromClass",
         "opaque": {"driver": "gpu.vgpu.io", "parameters": {"priority": "high"}}},
        {"source": "FromClaim", "opaque": {"driver": "other.io", "parameters": {}}}]}}}})");
}

TEST(Claim, ReadsThisDriversResultsAndConfigs) {
  auto a = ParseClaim(Claim(), {"ns", "u1", "c"}, "gpu.vgpu.io");
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  ASSERT_EQ(a->devices.size(), 1u);
  EXPECT_EQ(a->devices[0].device, "gpu-0");
  EXPECT_EQ(a->devices[0].share_id, "s1");
  EXPECT_EQ(a->devices[0].memory_bytes, 4LL << 30);
  EXPECT_EQ(a->devices[0].cores, 30);
  ASSERT_EQ(a->configs.size(), 2u);
  // The class's config first, so the claim's overrides it.
  EXPECT_EQ(a->configs[0].parameters["priority"], "high");
  EXPECT_EQ(a->configs[1].parameters["priority"], "low");
  EXPECT_TRUE(a->configs[1].Applies("gpu"));
  EXPECT_FALSE(a->configs[1].Applies("other"));
}

TEST(Claim, ErrorsNameTheClaimAndField) {
  json c = Claim();
  c["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]["cores"] = "101";
  auto a = ParseClaim(c, {"ns", "u1", "c"}, "gpu.vgpu.io");
  ASSERT_FALSE(a.has_value());
  EXPECT_NE(a.error().message().find(
                "claim ns/c: status.allocation.devices.results[0].consumedCapacity.cores"),
            std::string::npos)
      << a.error().message();

  auto replaced = ParseClaim(Claim(), {"ns", "u2", "c"}, "gpu.vgpu.io");
  ASSERT_FALSE(replaced.has_value());
  EXPECT_NE(replaced.error().message().find("metadata.uid"), std::string::npos);

  json unallocated = Claim();
  unallocated.erase("status");
  auto u = ParseClaim(unallocated, {"ns", "u1", "c"}, "gpu.vgpu.io");
  ASSERT_FALSE(u.has_value());
  EXPECT_NE(u.error().message().find("status.allocation"), std::string::npos);

  auto none = ParseClaim(Claim(), {"ns", "u1", "c"}, "mig.vgpu.io");
  EXPECT_FALSE(none.has_value());
}

}  // namespace
}  // namespace vgpu::dra
