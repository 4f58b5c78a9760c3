#include "node/inventory.h"

#include <gtest/gtest.h>

#include "k8s/wire/gpu_inventory.h"
#include "node/cluster/fake_cluster.h"
#include "node/plugin/assignment.h"

namespace vgpu::node {
namespace {

std::vector<device::DeviceInfo> TwoGpus() {
  std::vector<device::DeviceInfo> d(2);
  d[0].index = 0;
  d[0].uuid = "GPU-a";
  d[0].name = "H100";
  d[0].memory_total_bytes = 80ULL << 30;
  d[0].numa_node = 1;
  d[0].nvlink_peers = {"GPU-b"};
  d[1].index = 1;
  d[1].uuid = "GPU-b";
  d[1].name = "H100";
  d[1].memory_total_bytes = 80ULL << 30;
  return d;
}

TEST(InventoryTest, ExtenderFormat) {
  NodeState state(TwoGpus(), 10, HealthRules{});
  EXPECT_EQ(InventoryJson(state, "nvidia.com/gpu"),
            "{\"version\":1,\"gpus\":["
            "{\"uuid\":\"GPU-a\",\"index\":0,\"model\":\"H100\",\"memory_mib\":81920,\"units\":10,"
            "\"health\":\"healthy\",\"numa\":1,\"nvlink_peers\":[\"GPU-b\"]},"
            "{\"uuid\":\"GPU-b\",\"index\":1,\"model\":\"H100\",\"memory_mib\":81920,\"units\":10,"
            "\"health\":\"healthy\",\"numa\":-1,\"nvlink_peers\":[]}]}");
}

// The MIG contract: the scheduler's own parser reads the modes and instances the node writes.
TEST(InventoryTest, ModesAndMigInstancesFollowTheContract) {
  std::vector<device::DeviceInfo> gpus = TwoGpus();
  gpus[0].name = gpus[1].name = "NVIDIA H200";
  gpus[0].memory_total_bytes = gpus[1].memory_total_bytes = 143771ULL << 20;
  NodeState state(gpus, 10, HealthRules{});
  state.SetMode(0, k8s::GpuMode::kMigDynamic);
  state.SetMigInstances(0, {{0, "MIG-one", 1, 0, 9, "3g.71gb", 0, 4, 71168ULL << 20, 60},
                            {0, "", 11, -1, 19, "1g.18gb", 4, 1, 16384ULL << 20, 16}});
  state.SetMode(1, k8s::GpuMode::kMps);
  auto inv = k8s::ParseInventory(InventoryJson(state, "nvidia.com/gpu"));
  ASSERT_TRUE(inv) << inv.error().ToString() << "\n" << InventoryJson(state, "nvidia.com/gpu");
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_EQ(inv->gpus[0].mode, k8s::GpuMode::kMigDynamic);
  ASSERT_EQ(inv->gpus[0].mig.size(), 1u);  // the half-made instance is not listed
  EXPECT_EQ(inv->gpus[0].mig[0].profile, "3g.71gb");
  EXPECT_EQ(inv->gpus[0].mig[0].uuid, "MIG-one");
  EXPECT_EQ(inv->gpus[0].mig[0].profile_id, 9);
  EXPECT_EQ(inv->gpus[1].mode, k8s::GpuMode::kMps);
  EXPECT_TRUE(inv->gpus[1].mig.empty());
}

// The topology rows, when known, in the extender's canonical form (k8s::FormatInventory).
TEST(InventoryTest, TopologyRowsAsLinks) {
  NodeState state(TwoGpus(), 10, HealthRules{});
  state.SetTopologyRows({{"X", "NV12"}, {"NV12", "X"}});
  std::string text = InventoryJson(state, "nvidia.com/gpu");
  EXPECT_NE(text.find("\"nvlink_peers\":[\"GPU-b\"],\"links\":[\"X\",\"NV12\"]}"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("pcie"), std::string::npos);
  state.SetPcieLink(5, 16);
  text = InventoryJson(state, "nvidia.com/gpu");
  EXPECT_NE(text.find("],\"pcie\":{\"generation\":5,\"width\":16}}"), std::string::npos) << text;
}

TEST(InventoryTest, PublishedOnlyWhenItChanges) {
  NodeState state(TwoGpus(), 10, HealthRules{});
  FakeCluster cluster;
  InventoryPublisher publisher(&cluster, "n", "nvidia.com/gpu");
  ASSERT_TRUE(publisher.Publish(state).ok());
  ASSERT_TRUE(publisher.Publish(state).ok());
  EXPECT_EQ(cluster.patch_count(), 1);
  device::HealthEvent e;
  e.uuid = "GPU-b";
  e.code = 79;
  state.health().OnEvent(e, 1);
  cluster.FailPatches(1);
  Status failed = publisher.Publish(state);
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.message().find("node n"), std::string::npos);
  ASSERT_TRUE(publisher.Publish(state).ok());  // retried
  EXPECT_EQ(cluster.patch_count(), 2);
  EXPECT_EQ(publisher.patches(), 2u);
  EXPECT_NE(cluster.NodeAnnotations("n")[kInventoryAnnotation].find("\"unhealthy\""),
            std::string::npos);
}

}  // namespace
}  // namespace vgpu::node
