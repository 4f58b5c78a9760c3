// The scheduler's manifests agree with the code: kube-scheduler's extender stanza points at the
// address the extender container listens on, uses its verbs, is nodeCacheCapable, gets every pod
// (no managedResources) and every feasible node, kube-scheduler ignores the resource names only
// the extender reads, and the RBAC grants what the extender calls.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>

#include "k8s/wire/pod_request.h"

#ifndef VGPU_SOURCE_DIR
#define VGPU_SOURCE_DIR "."
#endif

namespace vgpu::k8s {
namespace {

const std::string kDir = std::string(VGPU_SOURCE_DIR) + "/deploy/scheduler/";

std::vector<YAML::Node> LoadAll(const std::string& file) {
  return YAML::LoadAllFromFile(kDir + file);
}

TEST(Deploy, ExtenderStanzaMatchesTheExtender) {
  const YAML::Node cfg = YAML::LoadFile(kDir + "scheduler-config.yaml");
  EXPECT_EQ(cfg["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(cfg["kind"].as<std::string>(), "KubeSchedulerConfiguration");
  EXPECT_EQ(cfg["profiles"][0]["schedulerName"].as<std::string>(), "vgpu-scheduler");
  ASSERT_EQ(cfg["extenders"].size(), 1u);
  const YAML::Node ext = cfg["extenders"][0];
  EXPECT_EQ(ext["filterVerb"].as<std::string>(), "filter");
  EXPECT_EQ(ext["prioritizeVerb"].as<std::string>(), "prioritize");
  EXPECT_EQ(ext["bindVerb"].as<std::string>(), "bind");
  EXPECT_TRUE(ext["nodeCacheCapable"].as<bool>());
  EXPECT_FALSE(ext["enableHTTPS"].as<bool>());
  EXPECT_EQ(ext["weight"].as<int>(), 1);

  ResourceNames names;  // the defaults the extender reads
  // Every pod reaches the extender: with managedResources, only pods asking for one would.
  EXPECT_FALSE(ext["managedResources"].IsDefined());
  EXPECT_EQ(cfg["percentageOfNodesToScore"].as<int>(), 100);
  std::set<std::string> ignored;
  for (const YAML::Node& pc : cfg["profiles"][0]["pluginConfig"]) {
    if (pc["name"].as<std::string>() != "NodeResourcesFit") continue;
    for (const YAML::Node& r : pc["args"]["ignoredResources"]) ignored.insert(r.as<std::string>());
  }
  EXPECT_EQ(ignored, (std::set<std::string>{names.Memory(), names.MemoryPercent(), names.Cores(),
                                            names.Priority()}));

  // The extender container listens where kube-scheduler calls it.
  std::string listen, prefix, mode;
  bool cpu_pods = false;
  for (const YAML::Node& doc : LoadAll("deployment.yaml")) {
    for (const YAML::Node& c : doc["spec"]["template"]["spec"]["containers"]) {
      if (c["name"].as<std::string>() != "extender") continue;
      for (const YAML::Node& a : c["args"]) {
        const std::string arg = a.as<std::string>();
        if (arg.rfind("--listen=", 0) == 0) listen = arg.substr(9);
        if (arg.rfind("--resource-prefix=", 0) == 0) prefix = arg.substr(18);
        if (arg.rfind("--filter-mode=", 0) == 0) mode = arg.substr(14);
        cpu_pods = cpu_pods || arg == "--webhook-cpu-pods";
      }
    }
  }
  EXPECT_EQ("http://" + listen, ext["urlPrefix"].as<std::string>());
  EXPECT_EQ(prefix, names.prefix);
  EXPECT_EQ(mode, "narrow");
  EXPECT_TRUE(cpu_pods);  // CPU-only pods reach this profile, and so the extender
}

TEST(Deploy, RbacGrantsWhatTheExtenderCalls) {
  std::set<std::string> granted;  // "resource:verb"
  for (const YAML::Node& doc : LoadAll("rbac.yaml")) {
    if (doc["kind"].as<std::string>() != "ClusterRole") continue;
    if (doc["metadata"]["name"].as<std::string>() != "vgpu-scheduler-extender") continue;
    for (const YAML::Node& rule : doc["rules"]) {
      for (const YAML::Node& res : rule["resources"]) {
        for (const YAML::Node& verb : rule["verbs"]) {
          granted.insert(res.as<std::string>() + ":" + verb.as<std::string>());
        }
      }
    }
  }
  // KubeClient calls made by the scheduler: list/watch/get nodes and pods, patch pod
  // annotations, create bindings. Nothing else (least privilege).
  EXPECT_EQ(granted, (std::set<std::string>{"nodes:get", "nodes:list", "nodes:watch", "pods:get",
                                            "pods:list", "pods:watch", "pods:patch",
                                            "pods/binding:create"}));
}

}  // namespace
}  // namespace vgpu::k8s
