// The annotation contract between the node daemon and the scheduler extender, checked with both
// sides' own code: the inventory the daemon publishes parses with the extender's parser into
// the same GPUs; the assignment the extender writes reaches the daemon's slices with the same
// limits; and for a Pod object as the API server returns it (vgpu's or HAMi's annotations),
// what the extender counts as reserved is what the daemon enforces, container by container.
#include <gtest/gtest.h>

#include "device/device_backend.h"
#include "k8s/wire/gpu_inventory.h"
#include "k8s/wire/pod_assignment.h"
#include "node/inventory.h"
#include "node/node_state.h"
#include "node/plugin/assignment.h"

namespace vgpu::node {
namespace {

TEST(ContractTest, TheExtenderReadsOurInventory) {
  std::vector<device::DeviceInfo> devices(2);
  devices[0] = {0,
                "GPU-aaaaaaaa-0000-4000-8000-000000000000",
                "NVIDIA H100 80GB HBM3",
                "0000:18:00.0",
                81559ULL << 20,
                132,
                0,
                {"GPU-bbbbbbbb-0000-4000-8000-000000000000"},
                4};
  devices[1] = {1,
                "GPU-bbbbbbbb-0000-4000-8000-000000000000",
                "NVIDIA \"quoted\" GPU",
                "0000:2a:00.0",
                40960ULL << 20,
                108,
                -1,
                {},
                0};
  NodeState state(devices, 7, HealthRules{});
  device::HealthEvent e;
  e.uuid = devices[1].uuid;
  e.code = 79;
  state.health().OnEvent(e, 1);
  const std::string text = InventoryJson(state, "nvidia.com/gpu");
  auto inv = k8s::ParseInventory(text);
  ASSERT_TRUE(inv.has_value()) << inv.error().ToString() << "\n" << text;
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_EQ(inv->gpus[0].uuid, devices[0].uuid);
  EXPECT_EQ(inv->gpus[0].memory_mib, 81559);
  EXPECT_EQ(inv->gpus[0].units, 7);
  EXPECT_TRUE(inv->gpus[0].healthy);
  EXPECT_EQ(inv->gpus[0].numa, 0);
  EXPECT_EQ(inv->gpus[0].nvlink_peers, devices[0].nvlink_peers);
  EXPECT_EQ(inv->gpus[1].model, "NVIDIA \"quoted\" GPU");
  EXPECT_FALSE(inv->gpus[1].healthy);
  EXPECT_EQ(inv->gpus[1].numa, -1);
  // The same text as the extender's canonical form: equal inventories compare equal as text.
  EXPECT_EQ(k8s::FormatInventory(*inv), text);
}

TEST(ContractTest, WeReadTheExtendersAssignment) {
  k8s::PodAssignment a;
  a.node = "gpu-7";
  a.reserved_milli = 300;
  a.reserved_memory_mib = 4096;
  k8s::ContainerAssignment init;
  init.name = "setup";
  init.init = true;
  init.gpus.push_back({"GPU-a", 0, 300, 1024, 30});
  k8s::ContainerAssignment main;
  main.name = "main";
  main.priority = 0;
  main.gpus.push_back({"GPU-a", 0, 300, 4096, 30});
  main.gpus.push_back({"GPU-b", 1, 1000, 81559, 100});
  a.containers = {init, main};
  auto ours = ParseAssignment(k8s::FormatAssignment(a));
  ASSERT_TRUE(ours.has_value()) << ours.error().ToString();
  EXPECT_EQ(ours->node, "gpu-7");
  ASSERT_EQ(ours->containers.size(), 2u);
  EXPECT_TRUE(ours->containers[0].init);
  EXPECT_EQ(ours->containers[0].priority, -1);
  EXPECT_EQ(ours->containers[1].priority, 0);
  ASSERT_EQ(ours->containers[1].devices.size(), 2u);
  EXPECT_EQ(ours->containers[1].devices[0].memory_bytes, 4096ULL << 20);
  EXPECT_EQ(ours->containers[1].devices[0].cores, 30);
  EXPECT_EQ(ours->containers[1].devices[1].uuid, "GPU-b");
  EXPECT_EQ(ours->containers[1].devices[1].memory_bytes, 81559ULL << 20);
  // And the other way: what our tools write, the extender reads.
  auto theirs = k8s::ParseAssignment(FormatAssignment(*ours));
  ASSERT_TRUE(theirs.has_value()) << theirs.error().ToString();
  EXPECT_EQ(theirs->containers[1].gpus[1].memory_mib, 81559);
  // The extender's timestamps read back to the millisecond.
  auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1748779200250));
  EXPECT_EQ(ParseTimestampMillis(k8s::FormatTimestamp(t)), 1748779200250);
}

// The GPUs and limits the extender reserves for `pod` equal those the daemon gives its
// containers (HAMi's positional entries resolved against spec.containers).
void ExpectSameView(const std::string& pod_json) {
  SCOPED_TRACE(pod_json);
  auto reserved = k8s::AssignmentOfPod(k8s::Json::parse(pod_json));
  ASSERT_TRUE(reserved.has_value()) << reserved.error().ToString();
  ASSERT_TRUE(reserved->has_value());
  auto pod = ParsePodJson(pod_json);
  ASSERT_TRUE(pod.has_value()) << pod.error().ToString();
  auto enforced = AssignmentOfPod(*pod);
  ASSERT_TRUE(enforced.has_value()) << enforced.error().ToString();
  ASSERT_TRUE(enforced->has_value());
  const k8s::PodAssignment& r = **reserved;
  const PodAssignment& e = **enforced;
  EXPECT_EQ(r.source, e.source);
  EXPECT_EQ(r.node, e.node);
  ASSERT_EQ(r.containers.size(), e.containers.size());
  for (size_t i = 0; i < r.containers.size(); ++i) {
    const k8s::ContainerAssignment& rc = r.containers[i];
    const ContainerAssignment& ec = e.containers[i];
    if (r.source == k8s::AssignmentSource::kHami) {
      EXPECT_EQ(ec.name, pod->containers.at(std::stoul(rc.name.substr(1))));
    } else {
      EXPECT_EQ(ec.name, rc.name);
    }
    EXPECT_EQ(ec.init, rc.init);
    EXPECT_EQ(ec.priority, rc.priority);
    ASSERT_EQ(ec.devices.size(), rc.gpus.size());
    for (size_t k = 0; k < rc.gpus.size(); ++k) {
      EXPECT_EQ(ec.devices[k].uuid, rc.gpus[k].uuid);
      EXPECT_EQ(ec.devices[k].memory_bytes, static_cast<uint64_t>(rc.gpus[k].memory_mib) << 20);
      EXPECT_EQ(ec.devices[k].cores, rc.gpus[k].cores);
    }
  }
}

TEST(ContractTest, WhatTheExtenderReservesTheDaemonEnforces) {
  k8s::PodAssignment a;
  a.node = "gpu-7";
  k8s::ContainerAssignment main;
  main.name = "main";
  main.priority = 1;
  main.gpus.push_back({"GPU-a", 0, 250, 2048, 25});
  a.containers = {main};
  const k8s::Json ours = {{"metadata",
                           {{"name", "p"},
                            {"namespace", "ml"},
                            {"uid", "u-1"},
                            {"annotations",
                             {{k8s::kAssignedGpusAnnotation, k8s::FormatAssignment(a)},
                              // Ours wins over a stale HAMi allocation on both sides.
                              {k8s::kHamiAllocatedAnnotation, "GPU-x,NVIDIA,1,1:;"}}}}},
                          {"spec", {{"nodeName", "gpu-7"}, {"containers", {{{"name", "main"}}}}}}};
  ExpectSameView(ours.dump());
  // Placed by HAMi: three containers, the middle one without a GPU; the node from spec.nodeName.
  const k8s::Json hami = {
      {"metadata",
       {{"name", "h"},
        {"namespace", "ml"},
        {"uid", "u-2"},
        {"annotations",
         {{k8s::kHamiAllocatedAnnotation,
           "GPU-a,NVIDIA,4096,30:GPU-b,NVIDIA,81559,0:;;GPU-c,NVIDIA,1000,100:;"},
          {k8s::kHamiNodeAnnotation, "gpu-old"}}}}},
      {"spec",
       {{"nodeName", "gpu-7"},
        {"containers", {{{"name", "train"}}, {{"name", "log"}}, {{"name", "eval"}}}}}}};
  ExpectSameView(hami.dump());
}

}  // namespace
}  // namespace vgpu::node
