// FakeCluster: an in-memory ClusterClient for tests and for `vgpu node --sim` without a cluster
// (pods loaded from a JSON file). Thread-safe.
#pragma once

#include <mutex>

#include "node/cluster/cluster.h"

namespace vgpu::node {

class FakeCluster final : public ClusterClient {
 public:
  void UpsertPod(PodInfo pod);
  void RemovePod(const std::string& uid);
  void SetPhase(const std::string& uid, const std::string& phase);
  // The next `count` calls of ListPodsOnNode / PatchNodeAnnotations fail with kUnavailable.
  void FailLists(int count);
  void FailPatches(int count);

  std::map<std::string, std::string> NodeAnnotations(const std::string& node) const;
  // Every value ever written to annotation `key` of `node`, oldest first.
  std::vector<std::string> AnnotationHistory(const std::string& node, const std::string& key) const;
  int patch_count() const;
  int list_count() const;
  // Events posted about nodes, oldest first: "node type reason: message".
  std::vector<std::string> Events() const;

  Result<std::vector<PodInfo>> ListPodsOnNode(const std::string& node) override;
  Status PatchNodeAnnotations(const std::string& node,
                              const std::map<std::string, std::string>& annotations) override;
  Status PostNodeEvent(const std::string& node, const std::string& type, const std::string& reason,
                       const std::string& message) override;

 private:
  std::vector<std::string> events_;
  mutable std::mutex mu_;
  std::map<std::string, PodInfo> pods_;  // by uid
  std::map<std::string, std::map<std::string, std::string>> node_annotations_;
  std::map<std::string, std::vector<std::string>> history_;  // "node/key" -> values
  int fail_lists_ = 0;
  int fail_patches_ = 0;
  int patches_ = 0;
  int lists_ = 0;
};

}  // namespace vgpu::node
