// What the node daemon needs from the Kubernetes API server, behind a small interface: the pods
// bound to this node (with their annotations and container IDs), and patching this node's
// annotations. The daemon uses nothing else, which keeps its RBAC small (pods: list, watch; nodes:
// get, patch) and lets tests run it against FakeCluster.
#pragma once

#include <cstdint>
#include <functional>
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
  // spec.containers names, in order (HAMi's allocation lists containers by position).
  std::vector<std::string> containers;
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

  // Optional: watch the pods of `node`, calling `on_change` with all of them (as
  // ListPodsOnNode would return) after every change, from a thread of the client's; the first
  // call (the initial list) may come before it returns. Clients that cannot watch return
  // kFailedPrecondition; the daemon then relies on listing.
  using PodsCallback = std::function<void(std::vector<PodInfo> pods)>;
  virtual Status WatchPodsOnNode(const std::string& /*node*/, PodsCallback /*on_change*/) {
    return Status::FailedPrecondition("this cluster client cannot watch pods");
  }
  // True while a watch started by WatchPodsOnNode has listed and keeps the pods current (no
  // failed list or watch since the previous call).
  virtual bool WatchingPods() const { return false; }
  // Ends the watch; on_change is not called after it returns.
  virtual void StopWatchingPods() {}
  // Optional: records a Kubernetes Event about the node (`type` "Normal" or "Warning",
  // `reason` CamelCase, e.g. "GpuQuarantined"). Clients without events return Ok.
  virtual Status PostNodeEvent(const std::string& /*node*/, const std::string& /*type*/,
                               const std::string& /*reason*/, const std::string& /*message*/) {
    return Status::Ok();
  }
};

}  // namespace vgpu::node
