#include "node/inventory.h"

#include <gtest/gtest.h>

#include "node/assignment.h"
#include "node/fake_cluster.h"

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

// The topology rows, when known, in the extender's canonical form (k8s::FormatInventory).
TEST(InventoryTest, TopologyRowsAsLinks) {
  NodeState state(TwoGpus(), 10, HealthRules{});
  state.SetTopologyRows({{"X", "NV12"}, {"NV12", "X"}});
  std::string text = InventoryJson(state, "nvidia.com/gpu");
  EXPECT_NE(text.find("\"nvlink_peers\":[\"GPU-b\"],\"links\":[\"X\",\"NV12\"]}"),
            std::string::npos)
      << text;
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
