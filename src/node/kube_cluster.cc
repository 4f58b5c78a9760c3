#include "node/kube_cluster.h"

#include "k8s/http_kube_client.h"
#include "k8s/kube_config.h"
#include "node/assignment.h"

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

Status KubeCluster::PatchNodeAnnotations(const std::string& node,
                                         const std::map<std::string, std::string>& annotations) {
  k8s::AnnotationChanges changes;
  for (const auto& [k, v] : annotations) changes[k] = v;
  auto patched = k8s::PatchAnnotations(*client_, k8s::ResourceKind::kNode, "", node, changes);
  return patched.status();
}

}  // namespace vgpu::node
