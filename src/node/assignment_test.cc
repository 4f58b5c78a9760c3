#include "node/assignment.h"

#include <gtest/gtest.h>

#include "node/unit_id.h"

namespace vgpu::node {
namespace {

TEST(UnitIdTest, RoundTrip) {
  std::string id = MakeUnitId("GPU-0a1b2c3d-0000-4000-8000-00000000000f", 7);
  EXPECT_EQ(id, "GPU-0a1b2c3d-0000-4000-8000-00000000000f-7");
  EXPECT_LE(id.size(), kMaxDeviceIdLength);
  auto ref = ParseUnitId(id);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->gpu_uuid, "GPU-0a1b2c3d-0000-4000-8000-00000000000f");
  EXPECT_EQ(ref->unit, 7);
}

TEST(UnitIdTest, Rejects) {
  EXPECT_FALSE(ParseUnitId("nodash").has_value());
  EXPECT_FALSE(ParseUnitId("-3").has_value());
  EXPECT_FALSE(ParseUnitId("GPU-x-").has_value());
  EXPECT_FALSE(ParseUnitId("GPU-x-1a").has_value());
  EXPECT_FALSE(ParseUnitId("GPU-x-12345").has_value());
  EXPECT_FALSE(ParseUnitId("GPU-x-1000").has_value());
  EXPECT_TRUE(ParseUnitId("GPU-x-999").has_value());
}

constexpr const char* kGood = R"({"version": 1, "node": "gpu-7",
  "reserved": {"milli": 300, "memory_mib": 4096},
  "containers": [
    {"name": "main", "init": false, "priority": 0,
     "gpus": [{"uuid": "GPU-a", "index": 0, "milli": 300, "memory_mib": 4096, "cores": 30},
              {"uuid": "GPU-b", "index": 1, "milli": 1000, "memory_mib": 8192, "cores": 100}]},
    {"name": "setup", "init": true,
     "gpus": [{"uuid": "GPU-a", "index": 0, "milli": 300, "memory_mib": 1024, "cores": 30}]}]})";

TEST(AssignmentTest, ParsesTheExtenderFormat) {
  auto a = ParseAssignment(kGood);
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ(a->node, "gpu-7");
  ASSERT_EQ(a->containers.size(), 2u);
  const ContainerAssignment& main = a->containers[0];
  EXPECT_EQ(main.name, "main");
  EXPECT_FALSE(main.init);
  EXPECT_EQ(main.priority, 0);
  ASSERT_EQ(main.devices.size(), 2u);
  EXPECT_EQ(main.devices[0].memory_bytes, 4096ULL << 20);
  EXPECT_EQ(main.devices[0].cores, 30);
  EXPECT_EQ(main.devices[1].index, 1);
  EXPECT_EQ(main.GpuUuids(), (std::vector<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_TRUE(a->containers[1].init);
  EXPECT_EQ(a->containers[1].priority, -1);
}

TEST(AssignmentTest, FormatRoundTrips) {
  auto a = ParseAssignment(kGood);
  ASSERT_TRUE(a.has_value());
  auto b = ParseAssignment(FormatAssignment(*a));
  ASSERT_TRUE(b.has_value()) << b.error().ToString();
  ASSERT_EQ(b->containers.size(), 2u);
  EXPECT_EQ(b->containers[0].devices[1].memory_bytes, 8192ULL << 20);
  EXPECT_EQ(b->containers[1].name, "setup");
}

struct BadCase {
  const char* json;
  const char* where;
};

TEST(AssignmentTest, RejectsWithThePath) {
  const BadCase cases[] = {
      {"{", "$: not valid JSON"},
      {"[]", "$: must be a JSON object"},
      {R"({"containers": []})", "$.version: missing"},
      {R"({"version": 2, "containers": []})", "version 2 is not supported"},
      {R"({"version": 1, "containers": []})", "$.containers: must be a non-empty array"},
      {R"({"version": 1, "containers": [{"gpus": []}]})", "$.containers[0].name: missing"},
      {R"({"version": 1, "containers": [{"name": "A_b", "gpus": []}]})", "is not a container name"},
      {R"({"version": 1, "containers": [{"name": "a", "gpus": []}]})",
       "$.containers[0].gpus: must be a non-empty array"},
      {R"({"version": 1, "containers": [{"name": "a", "gpus": [{"memory_mib": 1}]}]})",
       "$.containers[0].gpus[0].uuid: missing"},
      {R"({"version": 1, "containers": [{"name": "a", "gpus": [{"uuid": "G"}]}]})",
       "gpus[0].memory_mib: missing"},
      {R"({"version": 1, "containers": [{"name": "a", "gpus": [{"uuid": "G", "memory_mib": -5}]}]})",
       "must not be negative"},
      {R"({"version": 1, "containers": [{"name": "a", "gpus": [{"uuid": "G", "memory_mib": 0}]}]})",
       "must be positive"},
      {R"({"version": 1, "containers": [{"name": "a", "gpus": [{"uuid": "G", "memory_mib": 1, "cores": 101}]}]})",
       "cores: must be at most 100"},
      {R"({"version": 1, "containers": [{"name": "a", "gpus": [{"uuid": "G", "memory_mib": 1, "cores": 0}]}]})",
       "cores: must be 1..100"},
      {R"({"version": 1, "containers": [{"name": "a", "gpus": [{"uuid": "G", "memory_mib": "4"}]}]})",
       "must be a whole number"},
      {R"({"version": 1, "containers": [{"name": "a", "gpus": [{"uuid": "G", "memory_mib": 1}, {"uuid": "G", "memory_mib": 1}]}]})",
       "appears twice in one container"},
      {R"({"version": 1, "containers": [{"name": "a", "priority": 3, "gpus": [{"uuid": "G", "memory_mib": 1}]}]})",
       "priority: must be -1, 0 or 1"},
      {R"({"version": 1, "containers": [{"name": "a", "gpus": [{"uuid": "G", "memory_mib": 1}]}, {"name": "a", "gpus": [{"uuid": "H", "memory_mib": 1}]}]})",
       "appears twice"},
  };
  for (const BadCase& c : cases) {
    auto a = ParseAssignment(c.json);
    ASSERT_FALSE(a.has_value()) << c.json;
    EXPECT_EQ(a.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(a.error().message().find(c.where), std::string::npos)
        << c.json << " -> " << a.error().message();
    EXPECT_NE(a.error().message().find("vgpu.io/assigned-gpus"), std::string::npos);
  }
}

TEST(AssignmentTest, Timestamps) {
  EXPECT_EQ(ParseTimestampMillis("1970-01-01T00:00:01.250Z"), 1250);
  EXPECT_EQ(ParseTimestampMillis("1970-01-01T00:01:00Z"), 60000);
  EXPECT_EQ(ParseTimestampMillis("1970-01-01T00:00:00.5Z"), 500);
  EXPECT_EQ(ParseTimestampMillis("yesterday"), 0);
}

TEST(PodJsonTest, ParsesWhatTheDaemonUses) {
  auto pod = ParsePodJson(R"({"metadata": {"name": "p", "namespace": "ns", "uid": "u-1",
      "creationTimestamp": "2024-01-01T00:00:10Z",
      "annotations": {"vgpu.io/assigned-gpus": "{}", "n": 5}},
    "spec": {"nodeName": "gpu-7"},
    "status": {"phase": "Running", "containerStatuses": [
      {"name": "main", "containerID": "containerd://abc123"}]}})");
  ASSERT_TRUE(pod.has_value()) << pod.error().ToString();
  EXPECT_EQ(pod->Key(), "ns/p");
  EXPECT_EQ(pod->uid, "u-1");
  EXPECT_EQ(pod->node_name, "gpu-7");
  EXPECT_EQ(pod->phase, "Running");
  EXPECT_FALSE(pod->Terminated());
  EXPECT_EQ(pod->created_unix, 1704067210);
  EXPECT_EQ(pod->annotations.count("n"), 0u);  // not a string
  EXPECT_EQ(pod->container_ids.at("abc123"), "main");
  EXPECT_FALSE(ParsePodJson(R"({"metadata": {}})").has_value());
  auto list = ParsePodListJson(R"({"items": [{"metadata": {"name": "a", "uid": "1"}},
                                            {"metadata": {"name": "b", "uid": "2"}}]})");
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(list->size(), 2u);
  EXPECT_FALSE(ParsePodListJson("{}").has_value());
}

}  // namespace
}  // namespace vgpu::node
