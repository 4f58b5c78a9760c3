// FileCluster: a ClusterClient without an API server, for `vgpu node` on a machine outside a
// cluster (demos, tests of the command): the node's pods are read from a JSON file (a PodList
// or an array of Pod objects, as `kubectl get pods -o json` prints them) at every list, so
// editing the file adds and removes pods; node annotations are kept in memory and logged, and
// node Events are logged ("node N: event TYPE REASON: message").
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "node/cluster/cluster.h"

namespace vgpu::node {

class FileCluster final : public ClusterClient {
 public:
  explicit FileCluster(std::string pods_file);

  Result<std::vector<PodInfo>> ListPodsOnNode(const std::string& node) override;
  Status PatchNodeAnnotations(const std::string& node,
                              const std::map<std::string, std::string>& annotations) override;
  Status PostNodeEvent(const std::string& node, const std::string& type, const std::string& reason,
                       const std::string& message) override;
  std::map<std::string, std::string> NodeAnnotations() const;

 private:
  const std::string pods_file_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> annotations_;
};

}  // namespace vgpu::node
