#include "k8s/wire/pod_request.h"

#include <gtest/gtest.h>

namespace vgpu::k8s {
namespace {

Json Container(const std::string& name, const Json& limits) {
  return {{"name", name}, {"resources", {{"limits", limits}}}};
}

// (std::vector, not Json: a one-element braced list would not become a JSON array.)
Json Pod(const std::vector<Json>& containers, const std::vector<Json>& init = {},
         const Json& annotations = Json::object()) {
  return {{"metadata", {{"name", "p"}, {"annotations", annotations}}},
          {"spec", {{"containers", Json(containers)}, {"initContainers", Json(init)}}}};
}

TEST(PodRequest, CommunicationPatternIsCheckedNamingTheField) {
  const std::vector<Json> two = {
      Json{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}};
  auto ok = ParsePodGpuRequest(Pod(two, {}, {{"vgpu.io/comm-pattern", "pipeline"}}), {});
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_EQ(ok->comm_pattern, "pipeline");
  auto bad = ParsePodGpuRequest(Pod(two, {}, {{"vgpu.io/comm-pattern", "tp=2,dp=2"}}), {});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(),
            "vgpu.io/comm-pattern: tp*dp = 4 ranks but the pod asks for 2 GPUs (more ranks than "
            "GPUs)");
  auto row = ParsePodGpuRequest(Pod(two, {}, {{"vgpu.io/comm-pattern", "matrix=0 1;1"}}), {});
  ASSERT_FALSE(row.has_value());
  EXPECT_NE(row.error().message().find("matrix row 1 has 1 values, expected 2"), std::string::npos);
}

TEST(PodRequest, TopologyAnnotationRequiresNvlinkForTwoOrMoreGpus) {
  const std::vector<Json> two = {
      Json{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}};
  const std::vector<Json> one = {
      Json{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}};
  auto ok = ParsePodGpuRequest(Pod(two, {}, {{"vgpu.io/topology", "require-nvlink"}}), {});
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_TRUE(ok->require_nvlink);
  EXPECT_FALSE(ParsePodGpuRequest(Pod(two), {})->require_nvlink);
  auto bad = ParsePodGpuRequest(Pod(two, {}, {{"vgpu.io/topology", "nvlink"}}), {});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(),
            "vgpu.io/topology: \"nvlink\" is not a topology requirement (known: require-nvlink)");
  auto single = ParsePodGpuRequest(Pod(one, {}, {{"vgpu.io/topology", "require-nvlink"}}), {});
  ASSERT_FALSE(single.has_value());
  EXPECT_EQ(single.error().message(),
            "vgpu.io/topology: require-nvlink needs 2 or more GPUs, the pod asks for 1");
}

TEST(PodRequest, ReadsHamiResources) {
  const Json pod =
      Pod({Container("main", {{"nvidia.com/gpu", "2"},
                              {"nvidia.com/gpumem", "4096"},
                              {"nvidia.com/gpucores", "30"},
                              {"nvidia.com/priority", "1"},
                              {"cpu", "2"}}),
           Container("sidecar", {{"cpu", "1"}})},
          {}, {{"nvidia.com/use-gputype", "A100, H100"}, {"nvidia.com/nouse-gpuuuid", "GPU-bad"}});
  auto r = ParsePodGpuRequest(pod, {});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->containers.size(), 1u);
  const ContainerGpuRequest& c = r->containers[0];
  EXPECT_EQ(c.count, 2);
  EXPECT_EQ(c.memory_mib, 4096);
  EXPECT_EQ(c.cores, 30);
  EXPECT_EQ(c.priority, 1);
  EXPECT_TRUE(r->AllowsModel("NVIDIA A100-SXM4-80GB"));
  EXPECT_TRUE(r->AllowsModel("nvidia h100 pcie"));
  EXPECT_FALSE(r->AllowsModel("Tesla T4"));
  EXPECT_FALSE(r->AllowsUuid("GPU-bad"));
  EXPECT_TRUE(r->AllowsUuid("GPU-good"));
}

TEST(PodRequest, RequestsUsedWhenLimitsAbsentAndDefaultCount) {
  Json c = {{"name", "m"}, {"resources", {{"requests", {{"nvidia.com/gpumem-percentage", 25}}}}}};
  auto r = ParsePodGpuRequest(Pod({c}), {});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->containers[0].count, 1);
  EXPECT_EQ(r->containers[0].memory_percent, 25);
  EXPECT_FALSE(ParsePodGpuRequest(Pod({Container("x", {{"cpu", "1"}})}), {})->HasGpus());
}

TEST(PodRequest, CustomPrefix) {
  RequestOptions o;
  o.names.prefix = "example.com";
  auto r =
      ParsePodGpuRequest(Pod({Container("m", {{"example.com/gpu", 1}, {"nvidia.com/gpu", 5}})}), o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->containers[0].count, 1);
}

TEST(PodRequest, BadValuesGetClearErrors) {
  const auto err = [](const Json& limits) {
    auto r = ParsePodGpuRequest(Pod({Container("train", limits)}), {});
    EXPECT_FALSE(r.has_value()) << limits.dump();
    return r ? std::string() : r.error().message();
  };
  EXPECT_EQ(err({{"nvidia.com/gpu", 1}, {"nvidia.com/gpucores", 101}}),
            "container 'train': nvidia.com/gpucores=101 is outside 1..100");
  EXPECT_EQ(err({{"nvidia.com/gpu", 1}, {"nvidia.com/gpucores", 0}}),
            "container 'train': nvidia.com/gpucores=0 is outside 1..100");
  EXPECT_EQ(err({{"nvidia.com/gpu", -1}}), "container 'train': nvidia.com/gpu=-1 is outside 0..64");
  EXPECT_EQ(err({{"nvidia.com/gpumem", "-5"}}),
            "container 'train': nvidia.com/gpumem=-5 is outside 0..1099511627776");
  EXPECT_EQ(err({{"nvidia.com/gpumem-percentage", 0}}),
            "container 'train': nvidia.com/gpumem-percentage=0 is outside 1..100");
  EXPECT_EQ(err({{"nvidia.com/gpu", "0.5"}}),
            "container 'train': nvidia.com/gpu: '0.5' is not a whole number");
  EXPECT_NE(err({{"nvidia.com/gpumemory", 100}}).find("unknown resource nvidia.com/gpumemory"),
            std::string::npos);
  EXPECT_NE(err({{"nvidia.com/gpu", 0}, {"nvidia.com/gpumem", 100}}).find("nvidia.com/gpu=0"),
            std::string::npos);
  EXPECT_FALSE(ParsePodGpuRequest(Json::array(), {}).has_value());
  EXPECT_FALSE(ParsePodGpuRequest(Json{{"spec", {{"containers", 3}}}}, {}).has_value());
  // A structured value is named by its type, not printed (printing a deep one would recurse).
  EXPECT_EQ(err({{"nvidia.com/gpu", Json::array({Json::array({1})})}}),
            "container 'train': nvidia.com/gpu: an array is not a quantity");
}

TEST(PodRequest, ShapesFollowHamiDefaults) {
  RequestOptions o;
  const auto shape = [&](const Json& limits, int64_t cap) {
    auto r = ParsePodGpuRequest(Pod({Container("m", limits)}), o);
    EXPECT_TRUE(r.has_value());
    auto s = ShapeOn(r->containers[0], cap, o);
    EXPECT_TRUE(s.has_value());
    return *s;
  };
  GpuShape exclusive = shape({{"nvidia.com/gpu", 1}}, 16000);
  EXPECT_EQ(exclusive.milli, 1000);
  EXPECT_EQ(exclusive.memory_mib, 16000);
  EXPECT_EQ(exclusive.cores, 100);
  GpuShape cores_only = shape({{"nvidia.com/gpucores", 30}}, 16000);
  EXPECT_EQ(cores_only.milli, 300);
  EXPECT_EQ(cores_only.memory_mib, 16000);  // HAMi: memory not stated = all of it
  EXPECT_EQ(cores_only.cores, 30);
  GpuShape mem_only = shape({{"nvidia.com/gpumem", 4000}}, 16000);
  EXPECT_EQ(mem_only.milli, 250);  // compute in proportion to memory
  EXPECT_EQ(mem_only.cores, 100);  // not throttled
  GpuShape pct = shape({{"nvidia.com/gpumem-percentage", 10}, {"nvidia.com/gpucores", 5}}, 16000);
  EXPECT_EQ(pct.memory_mib, 1600);
  EXPECT_EQ(pct.milli, 50);
  o.default_memory_percent = 0;  // proportional
  EXPECT_EQ(shape({{"nvidia.com/gpucores", 25}}, 16000).memory_mib, 4000);

  auto big = ParsePodGpuRequest(Pod({Container("m", {{"nvidia.com/gpumem", 20000}})}), o);
  auto too_big = ShapeOn(big->containers[0], 16000, o);
  ASSERT_FALSE(too_big.has_value());
  EXPECT_EQ(too_big.error().code(), StatusCode::kResourceExhausted);
}

TEST(PodRequest, EnvelopeSumsAppContainersAndTakesMaxOfInit) {
  const Json pod = Pod(
      {Container("a",
                 {{"nvidia.com/gpu", 2}, {"nvidia.com/gpucores", 20}, {"nvidia.com/gpumem", 1000}}),
       Container(
           "b", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpucores", 50}, {"nvidia.com/gpumem", 3000}})},
      {Container("init",
                 {{"nvidia.com/gpu", 4}, {"nvidia.com/gpucores", 10}, {"nvidia.com/gpumem", 500}}),
       Json{{"name", "side"},
            {"restartPolicy", "Always"},
            {"resources",
             {{"limits",
               {{"nvidia.com/gpu", 1},
                {"nvidia.com/gpucores", 10},
                {"nvidia.com/gpumem", 100}}}}}}});
  auto r = ParsePodGpuRequest(pod, {});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->containers.size(), 4u);
  EXPECT_TRUE(r->containers[0].init);   // "init"
  EXPECT_FALSE(r->containers[1].init);  // the sidecar counts as an app container
  auto s = PodShapeOn(*r, 40000, {});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->num_gpus, 4);  // max(2 + 1 + 1 sidecar, 4 init)
  EXPECT_EQ(s->milli, 500);
  EXPECT_EQ(s->memory_mib, 3000);
}

TEST(PodRequest, SharedFaultDomainConsentComesFromTheAnnotation) {
  const Json c = Container("main", {{"nvidia.com/gpu", "1"}});
  EXPECT_FALSE(ParsePodGpuRequest(Pod({c}), {})->allow_shared_fault_domain);
  EXPECT_FALSE(ParsePodGpuRequest(Pod({c}, {}, {{"vgpu.io/allow-shared-fault-domain", "yes"}}), {})
                   ->allow_shared_fault_domain);
  EXPECT_TRUE(ParsePodGpuRequest(Pod({c}, {}, {{"vgpu.io/allow-shared-fault-domain", "true"}}), {})
                  ->allow_shared_fault_domain);
}

TEST(PodRequest, ReadsNvidiaMigResourceNames) {
  auto one = ParsePodGpuRequest(Pod({Container("main", {{"nvidia.com/mig-1g.18gb", "1"}})}), {});
  ASSERT_TRUE(one.has_value()) << one.error().ToString();
  ASSERT_EQ(one->containers.size(), 1u);
  EXPECT_EQ(one->containers[0].mig_profile, "1g.18gb");
  EXPECT_EQ(one->containers[0].count, 1);
  EXPECT_TRUE(one->AsksMigProfile());
  // gpumem and gpucores limit the container inside the instance; ".me" is kept as written.
  auto inner = ParsePodGpuRequest(Pod({Container("main", {{"nvidia.com/mig-3g.71gb.me", "1"},
                                                          {"nvidia.com/gpumem", "30000"},
                                                          {"nvidia.com/gpucores", "50"}})}),
                                  {});
  ASSERT_TRUE(inner.has_value()) << inner.error().ToString();
  EXPECT_EQ(inner->containers[0].mig_profile, "3g.71gb.me");
  EXPECT_EQ(inner->containers[0].memory_mib, 30000);
  EXPECT_EQ(inner->containers[0].cores, 50);
  // Bad combinations name the container and the resource.
  auto two = ParsePodGpuRequest(Pod({Container("main", {{"nvidia.com/mig-1g.18gb", "2"}})}), {});
  ASSERT_FALSE(two.has_value());
  EXPECT_EQ(two.error().message(), "container 'main': nvidia.com/mig-1g.18gb=2 is outside 0..1");
  auto with_gpu = ParsePodGpuRequest(
      Pod({Container("main", {{"nvidia.com/mig-1g.18gb", "1"}, {"nvidia.com/gpu", "1"}})}), {});
  ASSERT_FALSE(with_gpu.has_value());
  EXPECT_NE(with_gpu.error().message().find("cannot be combined with nvidia.com/gpu"),
            std::string::npos);
  auto both = ParsePodGpuRequest(
      Pod({Container("main", {{"nvidia.com/mig-1g.18gb", "1"}, {"nvidia.com/mig-2g.35gb", "1"}})}),
      {});
  ASSERT_FALSE(both.has_value());
  EXPECT_NE(both.error().message().find("two MIG profiles"), std::string::npos);
  auto pods = ParsePodGpuRequest(Pod({Container("a", {{"nvidia.com/mig-1g.18gb", "1"}}),
                                      Container("b", {{"nvidia.com/gpu", "1"}})}),
                                 {});
  ASSERT_FALSE(pods.has_value());
  EXPECT_NE(pods.error().message().find("only one container that asks for GPUs"),
            std::string::npos);
  // A zero count asks for nothing; other unknown names stay errors.
  auto zero = ParsePodGpuRequest(Pod({Container("main", {{"nvidia.com/mig-1g.18gb", "0"}})}), {});
  ASSERT_TRUE(zero.has_value());
  EXPECT_FALSE(zero->HasGpus());
  EXPECT_FALSE(
      ParsePodGpuRequest(Pod({Container("main", {{"nvidia.com/mig-", "1"}})}), {}).has_value());
}

}  // namespace
}  // namespace vgpu::k8s
