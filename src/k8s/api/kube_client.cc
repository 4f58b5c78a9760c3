#include "k8s/api/kube_client.h"

#include <chrono>
#include <thread>

namespace vgpu::k8s {

std::string_view KindName(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kNode:
      return "nodes";
    case ResourceKind::kPod:
      return "pods";
    case ResourceKind::kMutatingWebhookConfiguration:
      return "mutatingwebhookconfigurations";
    case ResourceKind::kSecret:
      return "secrets";
    case ResourceKind::kEvent:
      return "events";
    case ResourceKind::kResourceClaim:
      return "resourceclaims";
    case ResourceKind::kResourceSlice:
      return "resourceslices";
  }
  return "pods";
}

bool Namespaced(ResourceKind kind) {
  return kind == ResourceKind::kPod || kind == ResourceKind::kSecret ||
         kind == ResourceKind::kEvent || kind == ResourceKind::kResourceClaim;
}

std::string_view ApiGroupPath(ResourceKind kind) {
  if (kind == ResourceKind::kMutatingWebhookConfiguration) {
    return "/apis/admissionregistration.k8s.io/v1";
  }
  if (kind == ResourceKind::kResourceClaim || kind == ResourceKind::kResourceSlice) {
    return "/apis/resource.k8s.io/v1";
  }
  return "/api/v1";
}

std::string_view PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kJsonPatch:
      return "application/json-patch+json";
  }
  return "application/merge-patch+json";
}

void WatchCanceller::Cancel() {
  cancelled_.store(true);
  // The abort may land before the request is in flight and do nothing; repeat it until the
  // watch has returned (it unregisters), for at most about two seconds.
  for (int i = 0; i < 400; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!abort_) return;
      abort_();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void WatchCanceller::Register(std::function<void()> abort) {
  std::lock_guard<std::mutex> lock(mu_);
  abort_ = std::move(abort);
}

void WatchCanceller::Unregister() {
  std::lock_guard<std::mutex> lock(mu_);
  abort_ = nullptr;
}

Json AnnotationPatch(const AnnotationChanges& changes, const std::string& uid,
                     const std::string& resource_version) {
  Json annotations = Json::object();
  for (const auto& [key, value] : changes) {
    annotations[key] = value ? Json(*value) : Json(nullptr);
  }
  Json meta = {{"annotations", std::move(annotations)}};
  if (!uid.empty()) meta["uid"] = uid;
  if (!resource_version.empty()) meta["resourceVersion"] = resource_version;
  return Json{{"metadata", std::move(meta)}};
}

Result<Json> PatchAnnotations(KubeClient& client, ResourceKind kind, const std::string& ns,
                              const std::string& name, const AnnotationChanges& changes,
                              const std::string& uid) {
  return client.Patch(kind, ns, name, AnnotationPatch(changes, uid), PatchType::kMerge);
}

Result<Json> UpdateAnnotations(
    KubeClient& client, ResourceKind kind, const std::string& ns, const std::string& name,
    const std::function<Result<AnnotationChanges>(const Json& object)>& mutate, int max_attempts) {
  Status last;
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    auto object = client.Get(kind, ns, name);
    if (!object) return object.error();
    auto changes = mutate(*object);
    if (!changes) return changes.error();
    if (changes->empty()) return *object;
    auto patched = client.Patch(kind, ns, name,
                                AnnotationPatch(*changes, MetaString(*object, "uid"),
                                                MetaString(*object, "resourceVersion")),
                                PatchType::kMerge);
    if (patched) return patched;
    last = patched.error();
    if (last.code() != StatusCode::kAlreadyExists) return last;  // only a conflict is retried
  }
  return Status::Unavailable(std::string(KindName(kind)) + " " + name +
                             ": still conflicting after " + std::to_string(max_attempts) +
                             " attempts: " + last.message());
}

std::string AnnotationOf(const Json& object, const std::string& key) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto ann = meta->find("annotations");
  if (ann == meta->end() || !ann->is_object()) return "";
  auto it = ann->find(key);
  if (it == ann->end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::string MetaString(const Json& object, const char* field) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto it = meta->find(field);
  if (it == meta->end() || !it->is_string()) return "";
  return it->get<std::string>();
}

}  // namespace vgpu::k8s
