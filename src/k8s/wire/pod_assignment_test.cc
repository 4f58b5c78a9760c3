#include "k8s/wire/pod_assignment.h"

#include <gtest/gtest.h>

namespace vgpu::k8s {
namespace {

TEST(PodAssignment, RoundTrips) {
  PodAssignment a;
  a.node = "gpu-7";
  a.reserved_milli = 300;
  a.reserved_memory_mib = 4096;
  a.containers.push_back(
      {"main", false, 1, {{"GPU-a", 0, 300, 4096, 30}, {"GPU-b", 1, 300, 4096, 30}}});
  a.containers.push_back({"setup", true, -1, {{"GPU-a", 0, 200, 1024, 100}}});
  auto back = ParseAssignment(FormatAssignment(a));
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, a);
}

TEST(PodAssignment, RejectsBadFields) {
  EXPECT_FALSE(ParseAssignment("[]").has_value());
  auto r = ParseAssignment(
      R"({"version":1,"node":"n","reserved":{"milli":10,"memory_mib":1},"containers":[{"name":"c","gpus":[{"uuid":"u","index":0,"milli":0,"memory_mib":1,"cores":1}]}]})");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "containers[0].gpus[0].milli: 0 is outside 1..1000");
}

TEST(PodAssignment, ReadsHamiAllocation) {
  auto a =
      ParseHamiAllocation("GPU-a,NVIDIA,4000,30:GPU-b,NVIDIA,4000,30:;;GPU-a,NVIDIA,1000,0:;", "n");
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  ASSERT_EQ(a->containers.size(), 2u);
  EXPECT_EQ(a->containers[0].name, "#0");
  EXPECT_EQ(a->containers[0].gpus[1].milli, 300);
  EXPECT_EQ(a->containers[1].name, "#2");
  EXPECT_EQ(a->containers[1].gpus[0].milli, 1);  // no cores: the smallest share
  EXPECT_EQ(a->containers[1].gpus[0].cores, 100);
  EXPECT_FALSE(ParseHamiAllocation("GPU-a,NVIDIA,x,30:", "n").has_value());
  // Numbers must be whole: trailing garbage is not read as a prefix.
  EXPECT_FALSE(ParseHamiAllocation("GPU-a,NVIDIA,4000MiB,30:", "n").has_value());
  EXPECT_FALSE(ParseHamiAllocation("GPU-a,NVIDIA,4000,30x:", "n").has_value());
  EXPECT_FALSE(ParseHamiAllocation("GPU-a,NVIDIA,99999999999999999999,30:", "n").has_value());
  auto spaced = ParseHamiAllocation("GPU-a,NVIDIA, 4000 ,30\n:", "n");
  ASSERT_TRUE(spaced.has_value()) << spaced.error().ToString();
  EXPECT_EQ(spaced->containers[0].gpus[0].memory_mib, 4000);
}

TEST(PodAssignment, PodPrefersOursThenHami) {
  Json pod = {{"metadata",
               {{"name", "p"},
                {"namespace", "ns"},
                {"annotations",
                 {{kHamiAllocatedAnnotation, "GPU-a,NVIDIA,4000,30:;"},
                  {kHamiNodeAnnotation, "hami-node"}}}}},
              {"spec", {{"nodeName", "real-node"}}}};
  auto h = AssignmentOfPod(pod);
  ASSERT_TRUE(h.has_value() && h->has_value());
  EXPECT_EQ((*h)->node, "real-node");
  EXPECT_EQ((*h)->source, AssignmentSource::kHami);
  pod["metadata"]["annotations"][kAssignedGpusAnnotation] = "{";
  auto bad = AssignmentOfPod(pod);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("pod ns/p"), std::string::npos);
}

TEST(Timestamp, RoundTripsMilliseconds) {
  const auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1750000000123));
  EXPECT_EQ(FormatTimestamp(t), "2025-06-15T15:06:40.123Z");
  EXPECT_EQ(*ParseTimestamp("2025-06-15T15:06:40.123Z"), t);
  EXPECT_EQ(*ParseTimestamp("2025-06-15T15:06:40.123456+00:00"), t);
  EXPECT_EQ(ParseTimestamp("2025-06-15T15:06:40Z")->time_since_epoch(),
            std::chrono::seconds(1750000000));
  EXPECT_FALSE(ParseTimestamp("yesterday").has_value());
  EXPECT_FALSE(ParseTimestamp("2025-06-15T15:06:40+02:00").has_value());
}

TEST(PodAssignment, MigFieldRoundTripsAndIsOptional) {
  PodAssignment a;
  a.node = "n";
  ContainerAssignment c;
  c.name = "main";
  AssignedGpu g{"GPU-h", 0, 500, 16384, 100, AssignedMig{"1g.18gb", 4, ""}};
  AssignedGpu s{"GPU-s", 1, 1000, 71168, 100, AssignedMig{"3g.71gb", 0, "MIG-x"}};
  AssignedGpu plain{"GPU-p", 2, 300, 4096, 30, std::nullopt};
  c.gpus = {g, s, plain};
  a.containers.push_back(c);
  const std::string text = FormatAssignment(a);
  EXPECT_NE(text.find(R"("mig":{"profile":"1g.18gb","start":4})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("mig":{"profile":"3g.71gb","start":0,"uuid":"MIG-x"})"), std::string::npos)
      << text;
  auto back = ParseAssignment(text);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, a);
  EXPECT_FALSE(back->containers[0].gpus[2].mig.has_value());
}

TEST(PodAssignment, MigErrorsNameTheField) {
  const auto err = [](const std::string& mig) {
    const std::string text =
        R"({"version":1,"node":"n","reserved":{"milli":0,"memory_mib":0},"containers":[{"name":"c","gpus":[{"uuid":"G","index":0,"milli":1000,"memory_mib":1,"cores":100,"mig":)" +
        mig + "}]}]}";
    auto r = ParseAssignment(text);
    EXPECT_FALSE(r.has_value()) << text;
    return r ? std::string() : r.error().message();
  };
  EXPECT_NE(err("3").find("containers[0].gpus[0].mig: must be an object"), std::string::npos);
  EXPECT_NE(err(R"({"start":0})").find("containers[0].gpus[0].mig.profile"), std::string::npos);
  EXPECT_NE(err(R"({"profile":"1g.18gb","start":8})").find("containers[0].gpus[0].mig.start"),
            std::string::npos);
  EXPECT_NE(err(R"({"profile":"1g.18gb","start":1,"uuid":""})").find("mig.uuid"),
            std::string::npos);
}

TEST(PodAssignment, SharedFaultDomainNeedsTheAnnotation) {
  Json pod = {{"metadata", {{"name", "p"}, {"annotations", Json::object()}}}};
  EXPECT_FALSE(AllowsSharedFaultDomain(pod));
  pod["metadata"]["annotations"][kAllowSharedFaultDomainAnnotation] = "false";
  EXPECT_FALSE(AllowsSharedFaultDomain(pod));
  pod["metadata"]["annotations"][kAllowSharedFaultDomainAnnotation] = "true";
  EXPECT_TRUE(AllowsSharedFaultDomain(pod));
}

}  // namespace
}  // namespace vgpu::k8s
