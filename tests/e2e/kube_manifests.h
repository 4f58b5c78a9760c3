// What the Kubernetes control plane would do with manifests, for end-to-end tests without a
// cluster: YAML read as kubectl sends it, the API server's defaulting of a new pod, the
// AdmissionReview it sends a mutating webhook, and what deploy/ configures for kube-scheduler
// (the extender of the vgpu-scheduler profile) and for the API server (the webhook).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"

namespace vgpu::e2e {

using Json = nlohmann::json;

// A YAML document as JSON with every scalar a string (a pod's fields that matter here are
// strings once the API server has read them: quantities are serialised as strings).
// kInvalidArgument when the YAML does not parse.
Result<Json> YamlToJson(const std::string& text);

// What the API server does to a new pod before admission: the namespace, the UID, the creation
// time, spec.schedulerName "default-scheduler" when not given, requests defaulted from limits.
Json ApiServerDefaults(Json pod, const std::string& ns, const std::string& uid);

// An admission.k8s.io/v1 AdmissionReview for the CREATE of `pod`.
std::string AdmissionReview(const Json& pod, const std::string& uid);

// deploy/scheduler: kube-scheduler's configuration (scheduler-config.yaml) and the mutating
// webhook (webhook.yaml).
struct DeployedScheduler {
  std::string profile;  // the profile's schedulerName
  std::string filter_verb, prioritize_verb, bind_verb;
  bool node_cache_capable = false;
  std::map<std::string, bool> managed_resources;  // name -> ignoredByScheduler
  // What kube-scheduler's resource fit ignores: the ignoredByScheduler managed resources and the
  // profile's NodeResourcesFit ignoredResources.
  std::map<std::string, bool> ignored_resources;
  // Without managedResources kube-scheduler sends every pod to the extender.
  bool IsInterested(const Json& pod) const;
  std::string webhook_service;  // "<name>.<namespace>"
  std::string webhook_path;
  bool webhook_on_pod_create = false;  // a rule that sends pod CREATEs to it
};
Result<DeployedScheduler> LoadDeployedScheduler(const std::string& source_dir);

}  // namespace vgpu::e2e
