#include "node/plugin/assignment.h"

#include <gtest/gtest.h>

#include "node/plugin/unit_id.h"

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
  std::string json;
  const char* where;
};

// An assignment with `containers` (JSON text) and a GPU entry with `memory_mib` and `cores`.
std::string With(const std::string& containers) {
  return R"({"version": 1, "node": "n", "reserved": {"milli": 0, "memory_mib": 0}, "containers": )" +
         containers + "}";
}
std::string Gpu(const std::string& uuid, const std::string& mib = "1",
                const std::string& cores = "10") {
  return R"({"uuid": ")" + uuid + R"(", "index": 0, "milli": 100, "memory_mib": )" + mib +
         R"(, "cores": )" + cores + "}";
}

TEST(AssignmentTest, RejectsWithThePath) {
  const BadCase cases[] = {
      {"{", "not a JSON object"},
      {"[]", "not a JSON object"},
      {R"({"containers": []})", "version: missing"},
      {R"({"version": 2, "containers": []})", "version 2 is not supported"},
      {With("[]"), "containers: the assignment names no container"},
      {With(R"([{"gpus": []}])"), "containers[0].name: missing"},
      {With(R"([{"name": "A_b", "gpus": [)" + Gpu("G") + "]}]"), "is not a container name"},
      {With(R"([{"name": "a", "gpus": []}])"), "containers[0].gpus: names no GPU"},
      {With(R"([{"name": "a", "gpus": [{"memory_mib": 1}]}])"),
       "containers[0].gpus[0].uuid: missing"},
      {With(R"([{"name": "a", "gpus": [{"uuid": "G", "index": 0, "milli": 1}]}])"),
       "gpus[0].memory_mib: must be an integer"},
      {With(R"([{"name": "a", "gpus": [)" + Gpu("G", "-5") + "]}]"), "memory_mib: -5 is outside"},
      {With(R"([{"name": "a", "gpus": [)" + Gpu("G", "0") + "]}]"), "memory_mib: must be positive"},
      {With(R"([{"name": "a", "gpus": [)" + Gpu("G", "1", "101") + "]}]"),
       "cores: 101 is outside 1..100"},
      {With(R"([{"name": "a", "gpus": [)" + Gpu("G", "1", "0") + "]}]"),
       "cores: 0 is outside 1..100"},
      {With(R"([{"name": "a", "gpus": [)" + Gpu("G", "\"4\"") + "]}]"), "must be an integer"},
      {With(R"([{"name": "a", "gpus": [)" + Gpu("G") + "," + Gpu("G") + "]}]"),
       "appears twice in one container"},
      {With(R"([{"name": "a", "priority": 3, "gpus": [)" + Gpu("G") + "]}]"),
       "priority: 3 is outside -1..1"},
      {With(R"([{"name": "a", "gpus": [)" + Gpu("G") + R"(]}, {"name": "a", "gpus": [)" + Gpu("H") +
            "]}]"),
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

PodInfo HamiPod(const std::string& allocated, std::vector<std::string> containers) {
  PodInfo p;
  p.ns = "ml";
  p.name = "train";
  p.uid = "u-1";
  p.node_name = "gpu-7";
  p.containers = std::move(containers);
  p.annotations[kHamiAllocatedAnnotation] = allocated;
  p.annotations[kHamiNodeAnnotation] = "gpu-7";
  return p;
}

TEST(HamiAssignmentTest, MapsHamisAllocationToTheSpecsContainers) {
  // Three app containers; the second asked for no GPU (an empty entry).
  PodInfo pod = HamiPod("GPU-a,NVIDIA,4096,30:GPU-b,NVIDIA,2048,0:;;GPU-c,NVIDIA,1024,100:;",
                        {"trainer", "logger", "evaluator"});
  pod.annotations[kHamiBindTimeAnnotation] = "1748779200";
  auto a = AssignmentOfPod(pod);
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  ASSERT_TRUE(a->has_value());
  const PodAssignment& p = **a;
  EXPECT_EQ(p.source, k8s::AssignmentSource::kHami);
  EXPECT_EQ(p.node, "gpu-7");
  ASSERT_EQ(p.containers.size(), 2u);
  EXPECT_EQ(p.containers[0].name, "trainer");
  EXPECT_FALSE(p.containers[0].init);
  EXPECT_EQ(p.containers[0].priority, -1);
  ASSERT_EQ(p.containers[0].devices.size(), 2u);
  EXPECT_EQ(p.containers[0].devices[0].uuid, "GPU-a");
  EXPECT_EQ(p.containers[0].devices[0].memory_bytes, 4096ULL << 20);  // HAMi writes MiB
  EXPECT_EQ(p.containers[0].devices[0].cores, 30);
  EXPECT_EQ(p.containers[0].devices[1].memory_bytes, 2048ULL << 20);
  EXPECT_EQ(p.containers[0].devices[1].cores, 100);  // 0: not throttled
  EXPECT_EQ(p.containers[1].name, "evaluator");
  EXPECT_EQ(p.containers[1].devices[0].uuid, "GPU-c");
  EXPECT_EQ(p.containers[1].devices[0].cores, 100);
  EXPECT_EQ(p.containers[1].GpuUuids(), std::vector<std::string>{"GPU-c"});
  EXPECT_EQ(AssignedAtMillis(pod), 1748779200000);
}

TEST(HamiAssignmentTest, OursWinsAndEmptyIsNone) {
  PodInfo pod = HamiPod("GPU-a,NVIDIA,4096,30:;", {"main"});
  PodAssignment ours;
  ContainerAssignment c;
  c.name = "main";
  c.devices.push_back({"GPU-z", 3, 512ULL << 20, 50});
  ours.containers.push_back(c);
  pod.annotations[kAssignmentAnnotation] = FormatAssignment(ours);
  pod.annotations[kAssignedAtAnnotation] = "1970-01-01T00:00:02.500Z";
  pod.annotations[kHamiBindTimeAnnotation] = "9";
  auto a = AssignmentOfPod(pod);
  ASSERT_TRUE(a.has_value() && a->has_value());
  EXPECT_EQ((*a)->source, k8s::AssignmentSource::kVgpu);
  EXPECT_EQ((*a)->containers[0].devices[0].uuid, "GPU-z");
  EXPECT_EQ((*a)->containers[0].devices[0].index, 3);
  EXPECT_EQ(AssignedAtMillis(pod), 2500);

  auto none = AssignmentOfPod(HamiPod(";;", {"a", "b"}));
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->has_value());
  PodInfo plain;
  plain.ns = "ns";
  plain.name = "p";
  auto nothing = AssignmentOfPod(plain);
  ASSERT_TRUE(nothing.has_value());
  EXPECT_FALSE(nothing->has_value());
  plain.annotations[kHamiBindTimeAnnotation] = "soon";
  EXPECT_EQ(AssignedAtMillis(plain), 0);
}

TEST(HamiAssignmentTest, GarbledAllocationsAreClearErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"GPU-a,NVIDIA,lots,30:", "non-numeric memory or cores in 'GPU-a,NVIDIA,lots,30'"},
      {"GPU-a,NVIDIA,4096MiB,30:", "non-numeric memory or cores"},
      {"GPU-a,NVIDIA,99999999999999999999,30:", "non-numeric memory or cores"},
      {"GPU-a,NVIDIA:", "has fewer than 4 fields"},
      {",NVIDIA,1024,30:", "bad device"},
      {"GPU-a,NVIDIA,-5,30:", "bad device"},
      {"GPU-a,NVIDIA,0,30:", "memory_mib: must be positive, got 0 (GPU GPU-a)"},
      {"GPU-a,NVIDIA,4000000000000,30:", "is more than any GPU has"},
      {"GPU-a,NVIDIA,1024,30:GPU-a,NVIDIA,1024,30:", "GPU GPU-a appears twice in one container"},
      {";;GPU-a,NVIDIA,1024,30:",
       "container #2: HAMi's allocation has an entry for container #2 "
       "but the pod spec lists 1 container(s)"},
      {"\x01\xff,\x02:;;;;;::,,,", "fewer than 4 fields"},
  };
  for (const auto& [text, want] : cases) {
    auto a = AssignmentOfPod(HamiPod(text, {"main"}));
    ASSERT_FALSE(a.has_value()) << text;
    EXPECT_EQ(a.error().code(), StatusCode::kInvalidArgument);
    const std::string& m = a.error().message();
    EXPECT_NE(m.find(want), std::string::npos) << text << " -> " << m;
    EXPECT_NE(m.find("pod ml/train"), std::string::npos) << m;
    EXPECT_NE(m.find("hami.io/vgpu-devices-allocated"), std::string::npos) << m;
  }
  // A pod spec the daemon did not see (no containers) cannot take HAMi's positional entries.
  auto blind = AssignmentOfPod(HamiPod("GPU-a,NVIDIA,1024,30:", {}));
  ASSERT_FALSE(blind.has_value());
  EXPECT_NE(blind.error().message().find("lists 0 container(s)"), std::string::npos);
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
    "spec": {"nodeName": "gpu-7", "containers": [{"name": "main"}, {"name": "log"}]},
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
  EXPECT_EQ(pod->containers, (std::vector<std::string>{"main", "log"}));
  EXPECT_FALSE(ParsePodJson(R"({"metadata": {}})").has_value());
  auto list = ParsePodListJson(R"({"items": [{"metadata": {"name": "a", "uid": "1"}},
                                            {"metadata": {"name": "b", "uid": "2"}}]})");
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(list->size(), 2u);
  EXPECT_FALSE(ParsePodListJson("{}").has_value());
}

}  // namespace
}  // namespace vgpu::node
