// SlicePublisher against the fake API server: the layout follows the API server's release
// (whose counter rules the fake enforces), stale slices of the node are deleted and no one
// else's, a failed publication is retried at the Agent's interval, and the RBAC of deploy/dra
// grants every call the driver makes.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "device/fake_backend.h"
#include "dra/agent.h"
#include "dra/driver.h"
#include "dra/gpu_offers.h"
#include "dra/kube_api.h"
#include "dra/resource_slices.h"
#include "fake_api_server.h"
#include "k8s/api/http_kube_client.h"
#include "slice_rules.h"

namespace vgpu::dra {
namespace {

using k8s::ResourceKind;
using nlohmann::json;

// Records the verb of every call (get, list, create, update, patch, delete) per resource.
class RecordingClient final : public k8s::KubeClient {
 public:
  explicit RecordingClient(k8s::KubeClient* inner) : inner_(inner) {}
  Result<json> Get(ResourceKind k, const std::string& ns, const std::string& n) override {
    Note(k, "get");
    return inner_->Get(k, ns, n);
  }
  Result<k8s::ObjectList> List(ResourceKind k, const std::string& ns,
                               const k8s::ListOptions& o) override {
    Note(k, "list");
    return inner_->List(k, ns, o);
  }
  Result<json> Patch(ResourceKind k, const std::string& ns, const std::string& n, const json& p,
                     k8s::PatchType t) override {
    Note(k, "patch");
    return inner_->Patch(k, ns, n, p, t);
  }
  Result<json> Create(ResourceKind k, const std::string& ns, const json& o) override {
    Note(k, "create");
    return inner_->Create(k, ns, o);
  }
  Result<json> Update(ResourceKind k, const std::string& ns, const std::string& n,
                      const json& o) override {
    Note(k, "update");
    return inner_->Update(k, ns, n, o);
  }
  Status Delete(ResourceKind k, const std::string& ns, const std::string& n,
                const std::string& uid) override {
    Note(k, "delete");
    return inner_->Delete(k, ns, n, uid);
  }
  Result<json> ServerVersion() override { return inner_->ServerVersion(); }
  Status CreateBinding(const std::string& ns, const std::string& n, const std::string& uid,
                       const std::string& node) override {
    used["pods/binding"].insert("create");
    return inner_->CreateBinding(ns, n, uid, node);
  }
  Status Watch(ResourceKind k, const std::string& ns, const k8s::WatchOptions& o,
               const std::function<bool(k8s::WatchEvent&&)>& on_event,
               k8s::WatchCanceller* c) override {
    Note(k, "watch");
    return inner_->Watch(k, ns, o, on_event, c);
  }

  std::map<std::string, std::set<std::string>> used;  // resource -> verbs

 private:
  void Note(ResourceKind k, const char* verb) { used[std::string(k8s::KindName(k))].insert(verb); }
  k8s::KubeClient* inner_;
};

std::vector<SliceGpu> H200s(int n) {
  std::vector<SliceGpu> out;
  for (int i = 0; i < n; ++i) {
    SliceGpu g;
    g.info.index = i;
    g.info.uuid = "GPU-bbbbbbbb-0000-0000-0000-00000000000" + std::to_string(i);
    g.info.name = "NVIDIA H200";
    g.info.memory_total_bytes = 143771ULL << 20;
    g.info.sm_count = 132;
    FillFromProductName(&g);
    g.mig_devices = DynamicMigDevices(TableMigProfiles(g.info));
    out.push_back(g);
  }
  return out;
}

json ForeignSlice(const std::string& name, const std::string& driver, const std::string& node,
                  const std::string& pool) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"driver", driver},
            {"nodeName", node},
            {"pool", {{"name", pool}, {"generation", 9}, {"resourceSliceCount", 1}}},
            {"devices", json::array()}}}};
}

std::set<std::string> Names(const std::vector<json>& slices) {
  std::set<std::string> out;
  for (const json& s : slices) out.insert(s["metadata"]["name"].get<std::string>());
  return out;
}

std::vector<json> PoolOf(const std::vector<json>& slices, const std::string& node) {
  std::vector<json> out;
  for (const json& s : slices) {
    if (s["spec"]["driver"] == kDriverName && s["spec"]["nodeName"] == node) out.push_back(s);
  }
  return out;
}

class PublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    k8s::ClientOptions options;
    options.initial_backoff = std::chrono::milliseconds(5);
    options.max_attempts = 2;
    auto client = k8s::HttpKubeClient::Create(api_.ClientConfig(), options);
    ASSERT_TRUE(client.has_value()) << client.error().ToString();
    http_ = std::move(*client);
    client_ = std::make_unique<RecordingClient>(http_.get());
  }

  k8s::testing::FakeApiServer api_{
      k8s::testing::FakeApiServer::Options{.tls = false, .token = "", .threads = 8}};
  std::unique_ptr<k8s::HttpKubeClient> http_;
  std::unique_ptr<RecordingClient> client_;
};

// A node whose GPUs go from 16 to 2 keeps advertising only its 2: the other slices of its pool
// are deleted, as is one left by an earlier run, while slices of other nodes, drivers and pools
// stay as they were.
TEST_F(PublisherTest, StaleSlicesOfTheNodeAreDeletedAndNoOneElses) {
  const json other_node =
      ForeignSlice("node-b-gpu.vgpu.io-devices-0", kDriverName, "node-b", "node-b");
  const json other_driver =
      ForeignSlice("node-a-gpu.nvidia.com-0", "gpu.nvidia.com", "node-a", "node-a");
  const json other_pool = ForeignSlice("node-a-extra", kDriverName, "node-a", "extra");
  json earlier = ForeignSlice("node-a-gpu.vgpu.io-devices-9", kDriverName, "node-a", "node-a");
  earlier["spec"]["pool"]["generation"] = 4;
  for (const json& s : {other_node, other_driver, other_pool, earlier}) api_.PutResourceSlice(s);

  SlicePublisher publisher(client_.get(), "node-a", kDriverName);
  ASSERT_TRUE(publisher.Publish(H200s(16)).ok());
  EXPECT_EQ(publisher.generation(), 5);  // above the earlier run's slice
  std::vector<json> mine = PoolOf(api_.ResourceSlices(), "node-a");
  mine.erase(std::remove_if(mine.begin(), mine.end(),
                            [](const json& s) { return s["spec"]["pool"]["name"] != "node-a"; }),
             mine.end());
  EXPECT_EQ(mine.size(), 9u);  // 2 of counters, 7 of 416 devices; the earlier one is gone
  EXPECT_EQ(testing::ValidateResourceSlices(mine), std::vector<std::string>{});
  EXPECT_EQ(publisher.deletes(), 1u);

  ASSERT_TRUE(publisher.Publish(H200s(2)).ok());
  mine = PoolOf(api_.ResourceSlices(), "node-a");
  mine.erase(std::remove_if(mine.begin(), mine.end(),
                            [](const json& s) { return s["spec"]["pool"]["name"] != "node-a"; }),
             mine.end());
  EXPECT_EQ(Names(mine), (std::set<std::string>{"node-a-gpu.vgpu.io-counters-0",
                                                "node-a-gpu.vgpu.io-devices-0"}));
  EXPECT_EQ(testing::ValidateResourceSlices(mine), std::vector<std::string>{});
  int devices = 0;
  for (const json& s : mine) devices += s["spec"].value("devices", json::array()).size();
  EXPECT_EQ(devices, 2 * 26);
  const std::set<std::string> all = Names(api_.ResourceSlices());
  for (const json& s : {other_node, other_driver, other_pool}) {
    EXPECT_EQ(all.count(s["metadata"]["name"].get<std::string>()), 1u) << s["metadata"]["name"];
  }
  EXPECT_EQ(all.count("node-a-gpu.vgpu.io-devices-1"), 0u);
  EXPECT_EQ(publisher.deletes(), 1u + 7u);  // counters-1, devices-1..6
}

// A 1.34 API server gets counter sets with their devices (it refuses them apart), a 1.35 one
// gets them apart (it refuses them together); a control plane upgraded under a running driver
// refuses the old layout once, and the driver moves to the new one, deleting the old slices.
TEST_F(PublisherTest, TheLayoutFollowsTheApiServersRelease) {
  api_.SetVersion({{"major", "1"}, {"minor", "34"}, {"gitVersion", "v1.34.2"}});
  {
    // The layout of 1.35 is what a 1.34 server refuses (here: 4 GPUs' 40 counters in one slice).
    SlicePublisher fixed(client_.get(), "node-x", kDriverName, SliceLayout::kCountersApart);
    const Status s = fixed.Publish(H200s(4));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("must not exceed 32"), std::string::npos) << s.message();
    EXPECT_FALSE(fixed.published());
  }
  SlicePublisher publisher(client_.get(), "node-a", kDriverName);
  ASSERT_TRUE(publisher.Publish(H200s(4)).ok());
  EXPECT_EQ(publisher.layout(), SliceLayout::kCountersWithDevices);
  std::vector<json> mine = PoolOf(api_.ResourceSlices(), "node-a");
  EXPECT_EQ(Names(mine), (std::set<std::string>{"node-a-gpu.vgpu.io-0", "node-a-gpu.vgpu.io-1"}));
  EXPECT_EQ(testing::ValidateResourceSlices(mine, 34), std::vector<std::string>{});

  api_.SetVersion({{"major", "1"}, {"minor", "35"}, {"gitVersion", "v1.35.0"}});
  std::vector<SliceGpu> gpus = H200s(4);
  gpus[3].healthy = false;
  EXPECT_EQ(publisher.Publish(gpus).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(publisher.Publish(gpus).ok());
  EXPECT_EQ(publisher.layout(), SliceLayout::kCountersApart);
  mine = PoolOf(api_.ResourceSlices(), "node-a");
  EXPECT_EQ(Names(mine),
            (std::set<std::string>{"node-a-gpu.vgpu.io-counters-0", "node-a-gpu.vgpu.io-devices-0",
                                   "node-a-gpu.vgpu.io-devices-1"}));
  EXPECT_EQ(testing::ValidateResourceSlices(mine, 35), std::vector<std::string>{});
  EXPECT_TRUE(publisher.published());
}

// A failed publication is tried again after the publish interval, not as fast as the client
// can fail: an API server that is down is not hammered (and the log gets a line per interval).
TEST_F(PublisherTest, TheAgentRetriesAFailedPublicationAtItsInterval) {
  device::FakeBackend backend;
  backend.AddDefaultDevices(1);
  auto gpus = backend.Discover();
  ASSERT_TRUE(gpus.has_value());
  SlicePublisher publisher(client_.get(), "node-a", kDriverName);
  api_.FailNext(1000, 503, "GET");
  const int before = api_.requests("GET");
  Agent agent(AgentOptions{.sample_interval_ms = 20, .publish_interval_ms = 1000}, &backend, *gpus,
              &publisher);
  agent.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  agent.Stop();
  // Each publication asks /version (2 attempts): at start and once after 1 s. Retrying at every
  // sample would be 75 publications.
  const int publications = (api_.requests("GET") - before) / 2;
  EXPECT_GE(publications, 2);
  EXPECT_LE(publications, 3);
  EXPECT_FALSE(publisher.published());
}

std::map<std::string, std::set<std::string>> GrantedResourceVerbs() {
  std::map<std::string, std::set<std::string>> out;
  for (const YAML::Node& doc :
       YAML::LoadAllFromFile(std::string(VGPU_SOURCE_DIR) + "/deploy/dra/rbac.yaml")) {
    if (doc["kind"].as<std::string>() != "ClusterRole") continue;
    for (const YAML::Node& rule : doc["rules"]) {
      for (const YAML::Node& r : rule["resources"]) {
        for (const YAML::Node& v : rule["verbs"])
          out[r.as<std::string>()].insert(v.as<std::string>());
      }
    }
  }
  return out;
}

// Every call the driver makes to the API server (publishing, shrinking, a claim read) is one
// that deploy/dra's ClusterRole grants.
TEST_F(PublisherTest, TheRbacGrantsEveryCallTheDriverMakes) {
  api_.PutResourceSlice(
      ForeignSlice("node-a-gpu.vgpu.io-devices-5", kDriverName, "node-a", "node-a"));
  SlicePublisher publisher(client_.get(), "node-a", kDriverName);
  ASSERT_TRUE(publisher.Publish(H200s(2)).ok());
  std::vector<SliceGpu> fewer = H200s(2);
  fewer[1].healthy = false;
  ASSERT_TRUE(publisher.Publish(fewer).ok());
  KubeClaimSource claims(client_.get());
  (void)claims.GetClaim("ns", "absent");
  EXPECT_EQ(client_->used["resourceslices"],
            (std::set<std::string>{"get", "list", "create", "update", "delete"}));
  const auto granted = GrantedResourceVerbs();
  for (const auto& [resource, verbs] : client_->used) {
    for (const std::string& verb : verbs) {
      EXPECT_TRUE(granted.count(resource) != 0 && granted.at(resource).count(verb) != 0)
          << "deploy/dra/rbac.yaml does not grant " << verb << " on " << resource;
    }
  }
}

}  // namespace
}  // namespace vgpu::dra
