#include "dra/gpu_config.h"

#include <gtest/gtest.h>

namespace vgpu::dra {
namespace {

using nlohmann::json;

json Base() { return {{"apiVersion", "vgpu.io/v1alpha1"}, {"kind", "GpuConfig"}}; }

TEST(GpuConfig, ReadsEveryField) {
  json p = Base();
  p["priority"] = "high";
  p["guarantee"] = 30;
  p["mode"] = "elastic";
  p["weight"] = 2;
  p["timeSlice"] = "2ms";
  p["copyH2D"] = "10GB/s";
  p["copyD2H"] = "unlimited";
  p["copyBorrow"] = "on";
  auto c = ParseGpuConfig(p, "claim a/b: config[0]");
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->level, shm::kPriorityHigh);
  EXPECT_EQ(c->guarantee, 30);
  EXPECT_EQ(c->mode, "elastic");
  EXPECT_EQ(c->weight, 2);
  EXPECT_EQ(c->time_slice_ns, 2'000'000u);
  EXPECT_EQ(c->copy_h2d, 10'000'000'000u);
  EXPECT_EQ(c->copy_d2h, 0u);
  EXPECT_EQ(c->copy_borrow, true);
}

TEST(GpuConfig, ErrorsNameTheField) {
  struct Case {
    const char* field;
    json value;
  };
  for (const Case& c :
       {Case{"guarantee", 101}, Case{"priority", "urgent"}, Case{"timeSlice", "5s"},
        Case{"weight", 0}, Case{"mode", "greedy"}, Case{"colour", "red"},
        Case{"guarantee", json::array()}, Case{"copyH2D", "1KB/s"}, Case{"copyBorrow", "maybe"}}) {
    json p = Base();
    p[c.field] = c.value;
    auto r = ParseGpuConfig(p, "claim a/b: config[0]");
    ASSERT_FALSE(r.has_value()) << c.field;
    EXPECT_NE(r.error().message().find("claim a/b: config[0]." + std::string(c.field)),
              std::string::npos)
        << r.error().message();
  }
  auto wrong_kind = ParseGpuConfig({{"apiVersion", "vgpu.io/v1alpha1"}, {"kind", "Other"}}, "c");
  ASSERT_FALSE(wrong_kind.has_value());
  EXPECT_NE(wrong_kind.error().message().find("c.kind"), std::string::npos);
  EXPECT_FALSE(ParseGpuConfig(json::object(), "c").has_value());
  EXPECT_FALSE(ParseGpuConfig(json("text"), "c").has_value());
}

}  // namespace
}  // namespace vgpu::dra
