// KubeCluster: the ClusterClient over the API server, through src/k8s's KubeClient (HTTPS,
// in-cluster or kubeconfig credentials, retries). Lists the node's pods with the field selector
// spec.nodeName=<node>; patches node annotations with a JSON merge patch. WatchPodsOnNode keeps
// the node's pods current with src/k8s's Informer (list + watch with the same field selector,
// resumed after a drop, relisted after 410 Gone), so a pod bound to the node reaches the daemon
// within a watch event, not at the next list. Events of pods on other nodes (a server that does
// not apply the selector to watches) are treated as the pod leaving this node.
// Always built (src/k8s is a dependency of the node daemon).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "k8s/api/informer.h"
#include "k8s/api/kube_client.h"
#include "node/cluster/cluster.h"

namespace vgpu::node {

class KubeCluster final : public ClusterClient {
 public:
  explicit KubeCluster(std::unique_ptr<k8s::KubeClient> client);
  // Connects with `kubeconfig` (a path), or in-cluster / $KUBECONFIG / ~/.kube/config when empty.
  static Result<std::unique_ptr<KubeCluster>> Connect(const std::string& kubeconfig);

  Result<std::vector<PodInfo>> ListPodsOnNode(const std::string& node) override;
  Status PatchNodeAnnotations(const std::string& node,
                              const std::map<std::string, std::string>& annotations) override;
  Status WatchPodsOnNode(const std::string& node, PodsCallback on_change) override;
  bool WatchingPods() const override;
  void StopWatchingPods() override;
  // A core/v1 Event in namespace "default" whose involvedObject is the node.
  Status PostNodeEvent(const std::string& node, const std::string& type, const std::string& reason,
                       const std::string& message) override;
  ~KubeCluster() override;

  // The watch's counters (tests, diagnostics); zero when not watching.
  k8s::Informer::Stats watch_stats() const;

 private:
  void Replace(const std::vector<k8s::Json>& items);
  void OnEvent(const std::string& type, const k8s::Json& object);
  void Deliver();  // on the informer's thread

  std::unique_ptr<k8s::KubeClient> client_;
  std::unique_ptr<k8s::Informer> informer_;
  std::string watched_node_;
  PodsCallback on_change_;
  mutable std::mutex mu_;
  std::map<std::string, PodInfo> pods_;  // by uid; the watch's view
  mutable uint64_t errors_seen_ = 0;     // the informer's error count at the last WatchingPods()
};

}  // namespace vgpu::node
