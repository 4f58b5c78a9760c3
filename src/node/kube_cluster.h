// KubeCluster: the ClusterClient over the API server, through src/k8s's KubeClient (HTTPS,
// in-cluster or kubeconfig credentials, retries). Lists the node's pods with the field selector
// spec.nodeName=<node>; patches node annotations with a JSON merge patch.
// Built only when src/k8s is part of the build (VGPU_NODE_HAVE_K8S).
#pragma once

#include <memory>
#include <string>

#include "k8s/kube_client.h"
#include "node/cluster.h"

namespace vgpu::node {

class KubeCluster final : public ClusterClient {
 public:
  explicit KubeCluster(std::unique_ptr<k8s::KubeClient> client);
  // Connects with `kubeconfig` (a path), or in-cluster / $KUBECONFIG / ~/.kube/config when empty.
  static Result<std::unique_ptr<KubeCluster>> Connect(const std::string& kubeconfig);

  Result<std::vector<PodInfo>> ListPodsOnNode(const std::string& node) override;
  Status PatchNodeAnnotations(const std::string& node,
                              const std::map<std::string, std::string>& annotations) override;

 private:
  std::unique_ptr<k8s::KubeClient> client_;
};

}  // namespace vgpu::node
