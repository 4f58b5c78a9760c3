#include "slice/compute_settings.h"

#include <gtest/gtest.h>

namespace vgpu::slice {
namespace {

TEST(ComputeSettingsTest, ParsesEveryKey) {
  auto c = ParseComputeSettings(
      " guarantee=30%, weight=4;mode=Elastic , priority=realtime,time-slice=2ms", "a");
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->guarantee, 30);
  EXPECT_EQ(c->weight, 4);
  EXPECT_EQ(c->mode, "elastic");
  EXPECT_EQ(c->level, shm::kPriorityRealtime);
  EXPECT_EQ(c->time_slice_ns, 2'000'000u);
  EXPECT_TRUE(c->Any());
  auto hami = ParseComputeSettings("priority=0,time_slice=500us", "a");
  ASSERT_TRUE(hami.has_value());
  EXPECT_EQ(hami->level, shm::kPriorityHigh);
  EXPECT_EQ(hami->time_slice_ns, 500'000u);
  auto spill = ParseComputeSettings("memory-mode=spill", "a");
  ASSERT_TRUE(spill.has_value());
  EXPECT_EQ(spill->memory_mode, "spill");
  EXPECT_FALSE(spill->Any()) << "the memory mode is not a compute setting";
  auto empty = ParseComputeSettings(" , ", "a");
  ASSERT_TRUE(empty.has_value());
  EXPECT_FALSE(empty->Any());
}

TEST(ComputeSettingsTest, BadValuesNameTheAnnotationTheKeyAndTheValue) {
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"guarantee=120", "vgpu.io/compute: guarantee: \"120\" is not a percentage 0..100"},
      {"weight=0", "vgpu.io/compute: weight: \"0\" is not a weight 1..10000"},
      {"mode=burst", "vgpu.io/compute: mode: \"burst\" is not a mode (capped or elastic)"},
      {"priority=2", "vgpu.io/compute: priority: \"2\" is not a priority"},
      {"time-slice=2s", "vgpu.io/compute: time-slice: \"2s\" is not a time slice"},
      {"cores=30", "vgpu.io/compute: unknown key \"cores\""},
      {"memory-mode=swap", "vgpu.io/compute: memory-mode: \"swap\" is not a memory mode"},
      {"elastic", "vgpu.io/compute: expected key=value, got \"elastic\""},
      {"copy-h2d=5KB/s", "vgpu.io/compute: copy-h2d: \"5KB/s\": must be between 1MB/s and 10TB/s"},
      {"copy-d2h=fast", "vgpu.io/compute: copy-d2h: \"fast\""},
      {"copy-borrow=yes", "vgpu.io/compute: copy-borrow: \"yes\" is not on or off"},
  };
  for (const auto& c : cases) {
    auto r = ParseComputeSettings(c.text, "vgpu.io/compute");
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(c.message), std::string::npos) << r.error().message();
  }
}

TEST(ComputeSettingsTest, TheContainersAnnotationOverridesThePods) {
  std::map<std::string, std::string> annotations = {
      {"vgpu.io/compute", "guarantee=20,weight=2"},
      {"vgpu.io/compute.serve", "weight=5,priority=high"},
  };
  auto serve = ComputeSettingsOf(annotations, "serve");
  ASSERT_TRUE(serve.has_value());
  EXPECT_EQ(serve->guarantee, 20);
  EXPECT_EQ(serve->weight, 5);
  EXPECT_EQ(serve->level, shm::kPriorityHigh);
  auto other = ComputeSettingsOf(annotations, "sidecar");
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->weight, 2);
  EXPECT_EQ(other->level, -1);
  annotations["vgpu.io/compute.serve"] = "weight=x";
  auto bad = ComputeSettingsOf(annotations, "serve");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("vgpu.io/compute.serve: weight"), std::string::npos);
}

TEST(ComputeSettingsTest, CopyCapsAreCarriedAndOverriddenButAreNotComputeSettings) {
  auto c = ParseComputeSettings("copy-h2d=10GB/s, copy_d2h=unlimited, copy-borrow=ON", "a");
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->copy_h2d, 10'000'000'000u);
  EXPECT_EQ(c->copy_d2h, 0u) << "unlimited is no cap";
  EXPECT_EQ(c->copy_borrow, true);
  EXPECT_FALSE(c->Any());
  std::map<std::string, std::string> annotations = {
      {"vgpu.io/compute", "copy-h2d=10GB/s,copy-d2h=2GB/s"},
      {"vgpu.io/compute.serve", "copy-h2d=1GB/s,copy-borrow=off"},
  };
  auto serve = ComputeSettingsOf(annotations, "serve");
  ASSERT_TRUE(serve.has_value());
  EXPECT_EQ(serve->copy_h2d, 1'000'000'000u);
  EXPECT_EQ(serve->copy_d2h, 2'000'000'000u);
  EXPECT_EQ(serve->copy_borrow, false);
  auto other = ComputeSettingsOf(annotations, "sidecar");
  ASSERT_TRUE(other.has_value());
  EXPECT_FALSE(other->copy_borrow.has_value());
}

TEST(ComputeSettingsTest, PriorityNamesAndTimeSlices) {
  EXPECT_STREQ(shm::PriorityName(shm::kPriorityIdle), "idle");
  EXPECT_EQ(FormatTimeSlice(5'000'000), "5ms");
  EXPECT_EQ(FormatTimeSlice(750'000), "750us");
  EXPECT_EQ(FormatTimeSlice(1'500), "1500ns");
}

}  // namespace
}  // namespace vgpu::slice
