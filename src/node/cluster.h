// What the node daemon needs from the Kubernetes API server, behind a small interface: the pods
// bound to this node (with their annotations and container IDs), and patching this node's
// annotations. The daemon uses nothing else, which keeps its RBAC small (pods: list; nodes: get,
// patch) and lets tests run it against FakeCluster.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::node {

struct PodInfo {
  std::string ns;
  std::string name;
  std::string uid;
  std::string node_name;
  std::string phase;      // Pending, Running, Succeeded, Failed, Unknown
  bool deleting = false;  // metadata.deletionTimestamp is set
  int64_t created_unix = 0;
  std::map<std::string, std::string> annotations;
  // Container runtime ID (hex, without the "containerd://" scheme) -> container name, from
  // status.containerStatuses and status.initContainerStatuses.
  std::map<std::string, std::string> container_ids;

  bool Terminated() const { return phase == "Succeeded" || phase == "Failed"; }
  std::string Key() const { return ns + "/" + name; }
};

class ClusterClient {
 public:
  virtual ~ClusterClient() = default;
  // All pods whose spec.nodeName is `node`.
  virtual Result<std::vector<PodInfo>> ListPodsOnNode(const std::string& node) = 0;
  // Sets (merge-patches) the given annotations on the node.
  virtual Status PatchNodeAnnotations(const std::string& node,
                                      const std::map<std::string, std::string>& annotations) = 0;
};

}  // namespace vgpu::node
