// The webhook's manifests agree with the code and with each other: the MutatingWebhookConfiguration
// calls the Service and path the extender container serves, is the one whose caBundle it patches,
// never blocks pod creation, skips kube-system and vgpu's namespace and honours the opt-out label;
// the RBAC lets the scheduler get and patch that one configuration and nothing else.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>

#ifndef VGPU_SOURCE_DIR
#define VGPU_SOURCE_DIR "."
#endif

namespace {

const std::string kDir = std::string(VGPU_SOURCE_DIR) + "/deploy/scheduler/";

YAML::Node Find(const std::string& file, const std::string& kind, const std::string& name) {
  for (const YAML::Node& doc : YAML::LoadAllFromFile(kDir + file)) {
    if (doc["kind"].as<std::string>() == kind && doc["metadata"]["name"].as<std::string>() == name)
      return doc;
  }
  ADD_FAILURE() << kind << " " << name << " not in " << file;
  return YAML::Node();
}

// The extender container's --flag=value arguments.
std::map<std::string, std::string> ExtenderArgs(YAML::Node* container) {
  std::map<std::string, std::string> args;
  const YAML::Node d = Find("deployment.yaml", "Deployment", "vgpu-scheduler");
  for (const YAML::Node& c : d["spec"]["template"]["spec"]["containers"]) {
    if (c["name"].as<std::string>() != "extender") continue;
    *container = c;
    for (const YAML::Node& a : c["args"]) {
      const std::string arg = a.as<std::string>();
      const size_t eq = arg.find('=');
      args[arg.substr(0, eq)] = eq == std::string::npos ? "" : arg.substr(eq + 1);
    }
  }
  return args;
}

TEST(WebhookDeploy, ConfigurationCallsWhatTheExtenderServes) {
  YAML::Node container;
  auto args = ExtenderArgs(&container);
  ASSERT_TRUE(args.count("--webhook-listen"));
  EXPECT_TRUE(args.count("--webhook-self-signed"));
  const std::string listen = args["--webhook-listen"];
  const int port = std::stoi(listen.substr(listen.rfind(':') + 1));
  int container_port = 0;
  for (const YAML::Node& p : container["ports"]) {
    if (p["name"].as<std::string>() == "webhook") container_port = p["containerPort"].as<int>();
  }
  EXPECT_EQ(container_port, port);

  const YAML::Node svc = Find("webhook.yaml", "Service", "vgpu-scheduler-webhook");
  const YAML::Node cfg = Find("webhook.yaml", "MutatingWebhookConfiguration", "vgpu-scheduler");
  EXPECT_EQ(args["--webhook-config-name"], cfg["metadata"]["name"].as<std::string>());
  EXPECT_EQ(args["--webhook-service"], svc["metadata"]["name"].as<std::string>() + "." +
                                           svc["metadata"]["namespace"].as<std::string>());
  EXPECT_EQ(svc["spec"]["ports"][0]["targetPort"].as<std::string>(), "webhook");
  EXPECT_EQ(svc["spec"]["selector"]["app.kubernetes.io/name"].as<std::string>(), "vgpu-scheduler");

  ASSERT_EQ(cfg["webhooks"].size(), 1u);
  const YAML::Node hook = cfg["webhooks"][0];
  const YAML::Node ref = hook["clientConfig"]["service"];
  EXPECT_EQ(ref["name"].as<std::string>(), svc["metadata"]["name"].as<std::string>());
  EXPECT_EQ(ref["namespace"].as<std::string>(), svc["metadata"]["namespace"].as<std::string>());
  EXPECT_EQ(ref["port"].as<int>(), svc["spec"]["ports"][0]["port"].as<int>());
  EXPECT_EQ(ref["path"].as<std::string>(), args["--webhook-path"]);
  EXPECT_FALSE(hook["clientConfig"]["caBundle"]);  // written by the scheduler

  EXPECT_EQ(hook["failurePolicy"].as<std::string>(), "Ignore");
  EXPECT_EQ(hook["sideEffects"].as<std::string>(), "None");
  EXPECT_EQ(hook["admissionReviewVersions"][0].as<std::string>(), "v1");
  const YAML::Node rule = hook["rules"][0];
  EXPECT_EQ(rule["operations"][0].as<std::string>(), "CREATE");
  EXPECT_EQ(rule["resources"][0].as<std::string>(), "pods");

  // The scheduler name written into pods is kube-scheduler's profile.
  const YAML::Node sched = YAML::LoadFile(kDir + "scheduler-config.yaml");
  EXPECT_EQ(args["--scheduler-name"], sched["profiles"][0]["schedulerName"].as<std::string>());
}

TEST(WebhookDeploy, SkipsSystemNamespacesAndOptedOutPods) {
  const YAML::Node hook =
      Find("webhook.yaml", "MutatingWebhookConfiguration", "vgpu-scheduler")["webhooks"][0];
  const YAML::Node ns = hook["namespaceSelector"]["matchExpressions"][0];
  EXPECT_EQ(ns["key"].as<std::string>(), "kubernetes.io/metadata.name");
  EXPECT_EQ(ns["operator"].as<std::string>(), "NotIn");
  std::set<std::string> excluded;
  for (const YAML::Node& v : ns["values"]) excluded.insert(v.as<std::string>());
  const std::string own_ns =
      Find("webhook.yaml", "Service", "vgpu-scheduler-webhook")["metadata"]["namespace"]
          .as<std::string>();
  EXPECT_EQ(excluded, (std::set<std::string>{"kube-system", own_ns}));
  const YAML::Node obj = hook["objectSelector"]["matchExpressions"][0];
  EXPECT_EQ(obj["key"].as<std::string>(), "vgpu.io/webhook");
  EXPECT_EQ(obj["operator"].as<std::string>(), "NotIn");
  EXPECT_EQ(obj["values"][0].as<std::string>(), "disabled");
}

TEST(WebhookDeploy, RbacAllowsPatchingOnlyItsOwnConfiguration) {
  const YAML::Node role = Find("rbac.yaml", "ClusterRole", "vgpu-scheduler-webhook");
  ASSERT_EQ(role["rules"].size(), 1u);
  const YAML::Node rule = role["rules"][0];
  EXPECT_EQ(rule["apiGroups"].size(), 1u);
  EXPECT_EQ(rule["apiGroups"][0].as<std::string>(), "admissionregistration.k8s.io");
  EXPECT_EQ(rule["resources"].size(), 1u);
  EXPECT_EQ(rule["resources"][0].as<std::string>(), "mutatingwebhookconfigurations");
  ASSERT_EQ(rule["resourceNames"].size(), 1u);
  EXPECT_EQ(rule["resourceNames"][0].as<std::string>(), "vgpu-scheduler");
  std::set<std::string> verbs;
  for (const YAML::Node& v : rule["verbs"]) verbs.insert(v.as<std::string>());
  EXPECT_EQ(verbs, (std::set<std::string>{"get", "patch"}));
  const YAML::Node binding = Find("rbac.yaml", "ClusterRoleBinding", "vgpu-scheduler-webhook");
  EXPECT_EQ(binding["roleRef"]["name"].as<std::string>(), "vgpu-scheduler-webhook");
  EXPECT_EQ(binding["subjects"][0]["name"].as<std::string>(), "vgpu-scheduler");
}

TEST(WebhookDeploy, RbacAllowsOnlyItsOwnCertificateSecret) {
  YAML::Node container;
  auto args = ExtenderArgs(&container);
  ASSERT_TRUE(args.count("--webhook-secret"));
  const std::string secret = args["--webhook-secret"];
  const std::string service = args["--webhook-service"];
  const std::string ns = service.substr(service.find('.') + 1);
  const YAML::Node role = Find("rbac.yaml", "Role", "vgpu-scheduler-webhook-tls");
  EXPECT_EQ(role["metadata"]["namespace"].as<std::string>(), ns);
  std::set<std::string> named, unnamed;  // verbs on the one Secret / on any Secret
  for (const YAML::Node& rule : role["rules"]) {
    ASSERT_EQ(rule["apiGroups"].size(), 1u);
    EXPECT_EQ(rule["apiGroups"][0].as<std::string>(), "");
    ASSERT_EQ(rule["resources"].size(), 1u);
    EXPECT_EQ(rule["resources"][0].as<std::string>(), "secrets");
    auto& verbs = rule["resourceNames"] ? named : unnamed;
    if (rule["resourceNames"]) {
      ASSERT_EQ(rule["resourceNames"].size(), 1u);
      EXPECT_EQ(rule["resourceNames"][0].as<std::string>(), secret);
    }
    for (const YAML::Node& v : rule["verbs"]) verbs.insert(v.as<std::string>());
  }
  EXPECT_EQ(named, (std::set<std::string>{"get", "update"}));
  EXPECT_EQ(unnamed, (std::set<std::string>{"create"}));  // create cannot name its object
  const YAML::Node binding = Find("rbac.yaml", "RoleBinding", "vgpu-scheduler-webhook-tls");
  EXPECT_EQ(binding["metadata"]["namespace"].as<std::string>(), ns);
  EXPECT_EQ(binding["roleRef"]["kind"].as<std::string>(), "Role");
  EXPECT_EQ(binding["roleRef"]["name"].as<std::string>(), "vgpu-scheduler-webhook-tls");
  EXPECT_EQ(binding["subjects"][0]["name"].as<std::string>(), "vgpu-scheduler");
}

}  // namespace
