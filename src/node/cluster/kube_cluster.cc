#include "node/cluster/kube_cluster.h"

#include <chrono>
#include <ctime>

#include "common/log.h"
#include "k8s/api/http_kube_client.h"
#include "k8s/api/kube_config.h"
#include "node/plugin/assignment.h"

namespace vgpu::node {

KubeCluster::KubeCluster(std::unique_ptr<k8s::KubeClient> client) : client_(std::move(client)) {}

Result<std::unique_ptr<KubeCluster>> KubeCluster::Connect(const std::string& kubeconfig) {
  auto config = k8s::LoadDefaultConfig(kubeconfig);
  if (!config) return config.error();
  k8s::ClientOptions options;
  options.user_agent = "vgpu-node";
  auto client = k8s::HttpKubeClient::Create(*config, options);
  if (!client) return client.error();
  return std::make_unique<KubeCluster>(std::move(*client));
}

Result<std::vector<PodInfo>> KubeCluster::ListPodsOnNode(const std::string& node) {
  k8s::ListOptions options;
  options.field_selector = "spec.nodeName=" + node;
  auto list = client_->List(k8s::ResourceKind::kPod, "", options);
  if (!list) return list.error();
  std::vector<PodInfo> out;
  out.reserve(list->items.size());
  for (const k8s::Json& item : list->items) {
    auto pod = ParsePodJson(item.dump());
    if (pod) out.push_back(std::move(*pod));
  }
  return out;
}

KubeCluster::~KubeCluster() { StopWatchingPods(); }

Status KubeCluster::WatchPodsOnNode(const std::string& node, PodsCallback on_change) {
  if (informer_) return Status::FailedPrecondition("already watching the pods of " + watched_node_);
  watched_node_ = node;
  on_change_ = std::move(on_change);
  k8s::Informer::Options options;
  options.field_selector = "spec.nodeName=" + node;
  informer_ = std::make_unique<k8s::Informer>(
      client_.get(), k8s::ResourceKind::kPod, options,
      k8s::Informer::Handler{
          [this](const std::vector<k8s::Json>& items) { Replace(items); },
          [this](const std::string& type, const k8s::Json& object) { OnEvent(type, object); }});
  // The first list here, so that the caller has the pods on return; when it fails, the
  // informer's thread lists again (with backoff) before it watches.
  Status listed = informer_->ListNow();
  if (!listed.ok()) {
    VGPU_LOG_WARN("listing the pods of node %s for the watch: %s; retrying", node.c_str(),
                  listed.ToString().c_str());
  }
  informer_->Start();
  return Status::Ok();
}

bool KubeCluster::WatchingPods() const {
  if (!informer_ || !informer_->HasSynced()) return false;
  // A watch that failed since the last question (a dropped connection being retried, a watch
  // the RBAC forbids) does not count as live: the caller lists this time.
  const uint64_t errors = informer_->stats().errors;
  std::lock_guard<std::mutex> lock(mu_);
  const bool clean = errors == errors_seen_;
  errors_seen_ = errors;
  return clean;
}

void KubeCluster::StopWatchingPods() {
  if (informer_) informer_->Stop();
}

k8s::Informer::Stats KubeCluster::watch_stats() const {
  return informer_ ? informer_->stats() : k8s::Informer::Stats{};
}

void KubeCluster::Replace(const std::vector<k8s::Json>& items) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pods_.clear();
    for (const k8s::Json& item : items) {
      auto pod = ParsePodJson(item.dump());
      if (pod && pod->node_name == watched_node_) pods_[pod->uid] = std::move(*pod);
    }
  }
  Deliver();
}

void KubeCluster::OnEvent(const std::string& type, const k8s::Json& object) {
  auto pod = ParsePodJson(object.dump());
  if (!pod) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (type == "DELETED" || pod->node_name != watched_node_) {
      pods_.erase(pod->uid);
    } else {
      pods_[pod->uid] = std::move(*pod);
    }
  }
  Deliver();
}

void KubeCluster::Deliver() {
  std::vector<PodInfo> pods;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pods.reserve(pods_.size());
    for (const auto& [uid, pod] : pods_) pods.push_back(pod);
  }
  if (on_change_) on_change_(std::move(pods));
}

Status KubeCluster::PatchNodeAnnotations(const std::string& node,
                                         const std::map<std::string, std::string>& annotations) {
  k8s::AnnotationChanges changes;
  for (const auto& [k, v] : annotations) changes[k] = v;
  auto patched = k8s::PatchAnnotations(*client_, k8s::ResourceKind::kNode, "", node, changes);
  return patched.status();
}

Status KubeCluster::PostNodeEvent(const std::string& node, const std::string& type,
                                  const std::string& reason, const std::string& message) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  k8s::Json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", node + ".vgpu-"}, {"namespace", "default"}}},
      {"involvedObject", {{"kind", "Node"}, {"name", node}, {"uid", node}, {"apiVersion", "v1"}}},
      {"type", type},
      {"reason", reason},
      {"message", message},
      {"source", {{"component", "vgpu-node"}, {"host", node}}},
      {"firstTimestamp", stamp},
      {"lastTimestamp", stamp},
      {"count", 1},
  };
  return client_->Create(k8s::ResourceKind::kEvent, "default", event).status();
}

}  // namespace vgpu::node
