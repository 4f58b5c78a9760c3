#include "k8s/wire/host_request.h"

#include <gtest/gtest.h>

namespace vgpu::k8s {
namespace {

Json C(const std::string& name, const Json& requests, const Json& limits = Json::object()) {
  return {{"name", name}, {"resources", {{"requests", requests}, {"limits", limits}}}};
}

Json PodOf(std::vector<Json> containers, std::vector<Json> init = {}) {
  return {{"spec", {{"containers", containers}, {"initContainers", init}}}};
}

TEST(HostRequest, SumsAppContainersAndTakesTheLargestInit) {
  const Json pod = PodOf(
      {C("a", {{"cpu", "500m"}, {"memory", "1Gi"}}), C("b", {{"cpu", "1.5"}, {"memory", "512Mi"}})},
      {C("init", {{"cpu", "4"}, {"memory", "100Mi"}})});
  auto r = PodHostRequestOf(pod);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->cpu_milli, 4000);   // the init container is larger
  EXPECT_EQ(r->memory_mib, 1536);  // the apps together are larger
}

TEST(HostRequest, SidecarsRunBesideTheAppsAndBeforeLaterInits) {
  Json sidecar = C("proxy", {{"cpu", "1"}, {"memory", "1Gi"}});
  sidecar["restartPolicy"] = "Always";
  const Json pod = PodOf({C("app", {{"cpu", "2"}, {"memory", "1Gi"}})},
                         {sidecar, C("migrate", {{"cpu", "2500m"}, {"memory", "10Mi"}})});
  auto r = PodHostRequestOf(pod);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cpu_milli, 3500);   // migrate (2.5) runs beside the sidecar (1)
  EXPECT_EQ(r->memory_mib, 2048);  // app + sidecar
}

TEST(HostRequest, LimitsStandForMissingRequestsAndOverheadAdds) {
  Json pod = PodOf({C("a", Json::object(), {{"cpu", "2"}, {"memory", "3Gi"}})});
  pod["spec"]["overhead"] = {{"cpu", "250m"}, {"memory", "120Mi"}};
  auto r = PodHostRequestOf(pod);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cpu_milli, 2250);
  EXPECT_EQ(r->memory_mib, 3192);
  // Pod-level requests replace the containers' sum.
  pod["spec"]["resources"] = {{"requests", {{"cpu", "8"}}}};
  EXPECT_EQ(PodHostRequestOf(pod)->cpu_milli, 8250);
  EXPECT_EQ(PodHostRequestOf(pod)->memory_mib, 3192);
}

TEST(HostRequest, MemoryRoundsUpToMiBAndBadValuesNameTheContainer) {
  EXPECT_EQ(PodHostRequestOf(PodOf({C("a", {{"memory", "1"}})}))->memory_mib, 1);
  EXPECT_TRUE(PodHostRequestOf(PodOf(Json::array()))->IsZero());
  auto bad = PodHostRequestOf(PodOf({C("web", {{"cpu", "lots"}})}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("container 'web': cpu"), std::string::npos);
}

TEST(HostRequest, NodeAllocatableRoundsDown) {
  const Json node = {{"status", {{"allocatable", {{"cpu", "63500m"}, {"memory", "516418260Ki"}}}}}};
  const HostResources a = NodeAllocatableOf(node);
  EXPECT_EQ(a.cpu_milli, 63500);
  EXPECT_EQ(a.memory_mib, 504314);  // 516418260 KiB = 504314.7 MiB
  EXPECT_TRUE(NodeAllocatableOf(Json{{"status", Json::object()}}).IsZero());
}

}  // namespace
}  // namespace vgpu::k8s
