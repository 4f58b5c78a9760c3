// The node daemon against an API server: KubeCluster (over src/k8s's HTTPS client) and a local
// fake API server (tests/k8s): the node's pods by field selector, the inventory annotation on
// the Node object, retries of failing requests, a whole allocation with the kubelet emulator
// (found by an on-demand list), and the pod watch (a pod placed by HAMi reaches the daemon
// through its watch, with no list; a dropped watch is resumed).
#include "node/cluster/kube_cluster.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "device/fake_backend.h"
#include "fake_api_server.h"
#include "k8s/api/http_kube_client.h"
#include "kubelet_emulator.h"
#include "node/cluster/test_pods.h"
#include "node/daemon.h"
#include "support/wait_for.h"

namespace vgpu::node {
namespace {

using vgpu::testing::WaitFor;

namespace fs = std::filesystem;
using k8s::testing::FakeApiServer;
using k8s::testing::MakeNode;
using k8s::testing::MakePod;
using Json = nlohmann::json;

std::unique_ptr<KubeCluster> Connect(const FakeApiServer& server) {
  k8s::ClientOptions options;
  options.initial_backoff = std::chrono::milliseconds(10);
  auto client = k8s::HttpKubeClient::Create(server.ClientConfig(), options);
  EXPECT_TRUE(client.has_value()) << client.error().ToString();
  return std::make_unique<KubeCluster>(std::move(*client));
}

Json PodOn(const std::string& name, const std::string& node, const PodInfo& with) {
  Json pod = MakePod("default", name, with.uid, Json::array(), with.annotations);
  pod["spec"]["nodeName"] = node;
  pod["status"]["phase"] = "Pending";
  pod["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z";
  return pod;
}

TEST(KubeClusterTest, ListsTheNodesPodsAndPatchesItsAnnotations) {
  FakeApiServer server;
  server.PutNode(MakeNode("gpu-node-1"));
  PodInfo a = testing::PodWith("a", "gpu-node-1", {{"GPU-x", 512, 50}});
  PodInfo b = testing::PodWith("b", "gpu-node-2", {{"GPU-y"}});
  server.PutPod(PodOn("a", "gpu-node-1", a));
  server.PutPod(PodOn("b", "gpu-node-2", b));
  auto cluster = Connect(server);
  server.FailNext(2, 503, "GET");  // retried by the client
  auto pods = cluster->ListPodsOnNode("gpu-node-1");
  ASSERT_TRUE(pods.has_value()) << pods.error().ToString();
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_EQ((*pods)[0].name, "a");
  EXPECT_EQ((*pods)[0].node_name, "gpu-node-1");
  auto assignment = ParseAssignment((*pods)[0].annotations.at(kAssignmentAnnotation));
  ASSERT_TRUE(assignment.has_value());
  EXPECT_EQ(assignment->containers[0].devices[0].memory_bytes, 512ULL << 20);

  ASSERT_TRUE(cluster->PatchNodeAnnotations("gpu-node-1", {{kInventoryAnnotation, "{}"}}).ok());
  EXPECT_EQ(server.GetNode("gpu-node-1")["metadata"]["annotations"][kInventoryAnnotation], "{}");
  EXPECT_EQ(cluster->PatchNodeAnnotations("no-such-node", {{"k", "v"}}).code(),
            StatusCode::kNotFound);
}

// The daemon of gpu-node-1 (4 units per GPU) with its files under `root`, no metrics server and
// no periodic pod list during a test.
DaemonOptions NodeOptions(const std::string& root) {
  DaemonOptions o;
  o.node_name = "gpu-node-1";
  o.units_per_gpu = 4;
  o.plugin.kubelet_dir = root + "/kubelet";
  o.plugin.retry_ms = 100;
  o.slices.root = root + "/slices";
  o.slices.arbiter_dir = root + "/arbiter";
  o.metrics_listen = "";
  o.pod_refresh_ms = 3'600'000;
  return o;
}

TEST(KubeClusterTest, DaemonAllocatesAPodFromTheApiServer) {
  FakeApiServer server;
  server.PutNode(MakeNode("gpu-node-1"));
  const std::string root = "/tmp/vgpu-kc-" + std::to_string(getpid());
  fs::remove_all(root);
  vgpu::testing::KubeletEmulator kubelet(root + "/kubelet");
  ASSERT_TRUE(kubelet.Start());
  auto backend = std::make_unique<device::FakeBackend>();
  backend->AddDefaultDevices(2);
  const std::string gpu = backend->Discover()->at(1).uuid;
  auto cluster = Connect(server);
  DaemonOptions o = NodeOptions(root);
  o.watch_pods = false;  // the on-demand list finds the pod
  Daemon daemon(o, std::move(backend), cluster.get());
  ASSERT_TRUE(daemon.Start().ok());
  ASSERT_TRUE(kubelet.WaitForRegistrations(1, 10'000));
  // The inventory is on the Node object, in the extender's format.
  daemon.HousekeepNow();
  Json node = server.GetNode("gpu-node-1");
  std::string inventory = node["metadata"]["annotations"].value(kInventoryAnnotation, "");
  EXPECT_NE(inventory.find("\"uuid\":\"" + gpu + "\""), std::string::npos) << inventory;
  // A pod bound after the daemon's last list: the preference lists the node's pods again.
  server.PutPod(
      PodOn("trainer", "gpu-node-1", testing::PodWith("trainer", "gpu-node-1", {{gpu, 3072, 40}})));
  ASSERT_TRUE(kubelet.WaitForDevices([](const auto& d) { return d.size() == 8; }, 5000));
  std::vector<std::string> available;
  for (const auto& d : kubelet.devices()) available.push_back(d.id());
  std::vector<std::string> units;
  ASSERT_TRUE(kubelet.GetPreferredAllocation(available, {}, 1, &units).ok());
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0], gpu + "-0");
  v1beta1::ContainerAllocateResponse r;
  ASSERT_TRUE(kubelet.Allocate(units, &r).ok());
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), "3072m");
  EXPECT_EQ(r.envs().at("VGPU_SLICE"), "default/trainer/main");
  daemon.Stop();
  kubelet.Stop(false);
  fs::remove_all(root);
}

TEST(KubeClusterTest, TheDaemonWatchesTheNodesPods) {
  FakeApiServer server;
  server.PutNode(MakeNode("gpu-node-1"));
  const std::string root = "/tmp/vgpu-kw-" + std::to_string(getpid());
  fs::remove_all(root);
  vgpu::testing::KubeletEmulator kubelet(root + "/kubelet");
  ASSERT_TRUE(kubelet.Start());
  auto backend = std::make_unique<device::FakeBackend>();
  backend->AddDefaultDevices(2);
  const std::string gpu = backend->Discover()->at(0).uuid;
  auto cluster = Connect(server);
  DaemonOptions o = NodeOptions(root);
  Daemon daemon(o, std::move(backend), cluster.get());
  ASSERT_TRUE(daemon.Start().ok());
  ASSERT_TRUE(kubelet.WaitForRegistrations(1, 10'000));
  ASSERT_TRUE(WaitFor([&] { return cluster->WatchingPods(); }, std::chrono::milliseconds(5000)));
  ASSERT_TRUE(
      WaitFor([&] { return server.active_watches() > 0; }, std::chrono::milliseconds(5000)));
  const uint64_t lists = daemon.pods()->lists();

  // Placed by HAMi's scheduler and bound after the daemon listed: the second container of the
  // spec has a GPU. A pod of another node is not this node's.
  Json hami = MakePod("ml", "hami-train", "uid-hami",
                      Json::array({Json{{"name", "sidecar"}}, Json{{"name", "trainer"}}}),
                      {{"hami.io/vgpu-devices-allocated", ";" + gpu + ",NVIDIA,3000,25:;"},
                       {"hami.io/vgpu-node", "gpu-node-1"},
                       {"hami.io/bind-time", "1748779200"}});
  hami["spec"]["nodeName"] = "gpu-node-1";
  hami["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z";
  server.PutPod(hami);
  server.PutPod(PodOn("elsewhere", "gpu-node-2",
                      testing::PodWith("elsewhere", "gpu-node-2", {{gpu, 512, 50}})));
  ASSERT_TRUE(
      WaitFor([&] { return daemon.store()->size() == 1; }, std::chrono::milliseconds(5000)));
  EXPECT_EQ(daemon.store()->PodUids(), std::set<std::string>{"uid-hami"});

  ASSERT_TRUE(kubelet.WaitForDevices([](const auto& d) { return d.size() == 8; }, 5000));
  std::vector<std::string> available;
  for (const auto& d : kubelet.devices()) available.push_back(d.id());
  std::vector<std::string> units;
  ASSERT_TRUE(kubelet.GetPreferredAllocation(available, {}, 1, &units).ok());
  ASSERT_EQ(units.size(), 1u);
  v1beta1::ContainerAllocateResponse r;
  grpc::Status st = kubelet.Allocate("ml", "hami-train", "trainer", units, &r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(r.envs().at("VGPU_SLICE"), "ml/hami-train/trainer");
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), "3000m");
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_SM_LIMIT"), "25");
  EXPECT_EQ(daemon.pods()->lists(), lists);  // found through the watch, not a list

  // A dropped watch is resumed from where it was: later pods arrive, deletions too.
  server.DropActiveWatches();
  server.PutPod(
      PodOn("second", "gpu-node-1", testing::PodWith("second", "gpu-node-1", {{gpu, 1024, 10}})));
  ASSERT_TRUE(
      WaitFor([&] { return daemon.store()->size() == 2; }, std::chrono::milliseconds(5000)));
  server.DeletePod("default", "second");
  ASSERT_TRUE(
      WaitFor([&] { return daemon.store()->size() == 1; }, std::chrono::milliseconds(5000)));
  EXPECT_GE(cluster->watch_stats().resumed, 1u);
  EXPECT_EQ(daemon.pods()->lists(), lists);
  // Housekeeping lists once when the watch failed since it last looked (the drop may count as
  // one), and not while the watch is live.
  daemon.HousekeepNow();
  const uint64_t after_drop = daemon.pods()->lists();
  EXPECT_LE(after_drop, lists + 1);
  daemon.HousekeepNow();
  daemon.HousekeepNow();
  EXPECT_EQ(daemon.pods()->lists(), after_drop);
  daemon.Stop();
  EXPECT_TRUE(
      WaitFor([&] { return server.active_watches() == 0; }, std::chrono::milliseconds(5000)));
  kubelet.Stop(false);
  fs::remove_all(root);
}

}  // namespace
}  // namespace vgpu::node
