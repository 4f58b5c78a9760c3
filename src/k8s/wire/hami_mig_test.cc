#include "k8s/wire/hami_mig.h"

#include <gtest/gtest.h>

namespace vgpu::k8s {
namespace {

TEST(HamiMig, ParsesAndAppliesToTheHamiAssignment) {
  auto a = ParseHamiMigAllocations(
      R"([{"gpuUUID":"GPU-1","profile":"1g.18gb","placement":{"start":6,"size":1},"migUUID":"MIG-x","gpuInstanceID":3,"computeInstanceID":0,"extra":1}])");
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ((*a)[0].gpu_uuid, "GPU-1");
  EXPECT_EQ((*a)[0].mig.start, 6);
  EXPECT_EQ((*a)[0].mig.uuid, "MIG-x");
  Json pod = {
      {"metadata",
       {{"namespace", "ns"},
        {"name", "p"},
        {"annotations",
         {{"hami.io/vgpu-devices-allocated", "GPU-1,NVIDIA,16384,100:;"},
          {"hami.io/vgpu-node", "n"},
          {kHamiMigAllocationsAnnotation,
           R"([{"gpuUUID":"GPU-1","profile":"1g.18gb","placement":{"start":6,"size":1}}])"}}}}}};
  auto got = AssignmentOfPod(pod);
  ASSERT_TRUE(got.has_value()) << got.error().ToString();
  ASSERT_TRUE(got->has_value());
  const AssignedGpu& g = (*got)->containers[0].gpus[0];
  ASSERT_TRUE(g.mig.has_value());
  EXPECT_EQ(g.mig->profile, "1g.18gb");
  EXPECT_EQ(g.mig->start, 6);
}

TEST(HamiMig, ErrorsNameTheEntry) {
  EXPECT_FALSE(ParseHamiMigAllocations("{}").has_value());
  auto e =
      ParseHamiMigAllocations(R"([{"gpuUUID":"G","profile":"1g.18gb","placement":{"start":9}}])");
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message().find("[0].placement.start"), std::string::npos);
  auto p = ParseHamiMigAllocations(R"([{"gpuUUID":"G","placement":{"start":0}}])");
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().message().find("[0].profile"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::k8s
