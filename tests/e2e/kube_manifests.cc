#include "kube_manifests.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

namespace vgpu::e2e {
namespace {

Json ToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      Json o = Json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = ToJson(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      Json a = Json::array();
      for (const auto& e : n) a.push_back(ToJson(e));
      return a;
    }
    case YAML::NodeType::Scalar:
      return n.as<std::string>();
    default:
      return nullptr;
  }
}

Result<std::vector<Json>> LoadAll(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  std::vector<Json> docs;
  try {
    for (const YAML::Node& d : YAML::LoadAll(text.str())) {
      if (d.IsMap()) docs.push_back(ToJson(d));
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ": " + e.what());
  }
  return docs;
}

}  // namespace

Result<Json> YamlToJson(const std::string& text) {
  try {
    return ToJson(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("YAML: ") + e.what());
  }
}

Json ApiServerDefaults(Json pod, const std::string& ns, const std::string& uid) {
  pod["metadata"]["namespace"] = ns;
  pod["metadata"]["uid"] = uid;
  pod["metadata"]["creationTimestamp"] = "2025-06-01T12:00:00Z";
  if (!pod["spec"].contains("schedulerName")) pod["spec"]["schedulerName"] = "default-scheduler";
  for (Json& c : pod["spec"]["containers"]) {
    Json& resources = c["resources"];
    if (resources.contains("limits") && !resources.contains("requests")) {
      resources["requests"] = resources["limits"];
    }
  }
  return pod;
}

std::string AdmissionReview(const Json& pod, const std::string& uid) {
  return Json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request",
               {{"uid", uid},
                {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                {"namespace", pod["metadata"].value("namespace", "default")},
                {"operation", "CREATE"},
                {"userInfo", {{"username", "kubernetes-admin"}}},
                {"object", pod},
                {"dryRun", false}}}}
      .dump();
}

bool DeployedScheduler::IsInterested(const Json& pod) const {
  // kube-scheduler's HTTPExtender.IsInterested: every pod without managedResources, else a pod
  // whose containers (or init containers) request or limit one of them.
  if (managed_resources.empty()) return true;
  const Json spec = pod.value("spec", Json::object());
  for (const char* list : {"containers", "initContainers"}) {
    const Json containers = spec.value(list, Json::array());
    for (const Json& c : containers) {
      const Json resources = c.value("resources", Json::object());
      for (const char* section : {"requests", "limits"}) {
        const Json names = resources.value(section, Json::object());
        for (const auto& [name, v] : names.items()) {
          if (managed_resources.count(name) != 0) return true;
        }
      }
    }
  }
  return false;
}

Result<DeployedScheduler> LoadDeployedScheduler(const std::string& source_dir) {
  DeployedScheduler d;
  const std::string config_path = source_dir + "/deploy/scheduler/scheduler-config.yaml";
  auto config = LoadAll(config_path);
  if (!config) return config.error();
  if (config->empty()) return Status::InvalidArgument(config_path + ": no document");
  const Json& c = config->front();
  if (!c.contains("profiles") || c["profiles"].empty() || !c.contains("extenders") ||
      c["extenders"].size() != 1) {
    return Status::InvalidArgument(config_path + ": expected profiles and one extender");
  }
  d.profile = c["profiles"][0].value("schedulerName", "");
  const Json& e = c["extenders"][0];
  d.filter_verb = e.value("filterVerb", "");
  d.prioritize_verb = e.value("prioritizeVerb", "");
  d.bind_verb = e.value("bindVerb", "");
  d.node_cache_capable = e.value("nodeCacheCapable", "") == "true";
  for (const Json& r : e.value("managedResources", Json::array())) {
    d.managed_resources[r.value("name", "")] = r.value("ignoredByScheduler", "") == "true";
    if (r.value("ignoredByScheduler", "") == "true")
      d.ignored_resources[r.value("name", "")] = true;
  }
  const Json plugin_config = c["profiles"][0].value("pluginConfig", Json::array());
  for (const Json& pc : plugin_config) {
    if (pc.value("name", "") != "NodeResourcesFit") continue;
    const Json ignored = pc.value("args", Json::object()).value("ignoredResources", Json::array());
    for (const Json& r : ignored) d.ignored_resources[r.get<std::string>()] = true;
  }
  const std::string webhook_path = source_dir + "/deploy/scheduler/webhook.yaml";
  auto webhook = LoadAll(webhook_path);
  if (!webhook) return webhook.error();
  for (const Json& doc : *webhook) {
    if (doc.value("kind", "") != "MutatingWebhookConfiguration") continue;
    for (const Json& w : doc.value("webhooks", Json::array())) {
      const Json service = w["clientConfig"].value("service", Json::object());
      d.webhook_service = service.value("name", "") + "." + service.value("namespace", "");
      d.webhook_path = service.value("path", "/");
      for (const Json& rule : w.value("rules", Json::array())) {
        const Json ops = rule.value("operations", Json::array());
        const Json resources = rule.value("resources", Json::array());
        const auto has = [](const Json& list, const std::string& v) {
          for (const Json& x : list) {
            if (x == v || x == "*") return true;
          }
          return false;
        };
        d.webhook_on_pod_create =
            d.webhook_on_pod_create || (has(ops, "CREATE") && has(resources, "pods"));
      }
    }
  }
  if (d.webhook_service == ".") {
    return Status::InvalidArgument(webhook_path + ": no MutatingWebhookConfiguration service");
  }
  return d;
}

}  // namespace vgpu::e2e
