#include "node/cluster/fake_cluster.h"

namespace vgpu::node {

void FakeCluster::UpsertPod(PodInfo pod) {
  std::lock_guard<std::mutex> lock(mu_);
  pods_[pod.uid] = std::move(pod);
}

void FakeCluster::RemovePod(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  pods_.erase(uid);
}

void FakeCluster::SetPhase(const std::string& uid, const std::string& phase) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(uid);
  if (it != pods_.end()) it->second.phase = phase;
}

void FakeCluster::FailLists(int count) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_lists_ = count;
}

void FakeCluster::FailPatches(int count) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_patches_ = count;
}

std::map<std::string, std::string> FakeCluster::NodeAnnotations(const std::string& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = node_annotations_.find(node);
  return it == node_annotations_.end() ? std::map<std::string, std::string>{} : it->second;
}

std::vector<std::string> FakeCluster::AnnotationHistory(const std::string& node,
                                                        const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = history_.find(node + "/" + key);
  return it == history_.end() ? std::vector<std::string>{} : it->second;
}

int FakeCluster::patch_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return patches_;
}

int FakeCluster::list_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lists_;
}

Result<std::vector<PodInfo>> FakeCluster::ListPodsOnNode(const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  ++lists_;
  if (fail_lists_ > 0) {
    --fail_lists_;
    return Status::Unavailable("API server unavailable (injected)");
  }
  std::vector<PodInfo> out;
  for (const auto& [uid, pod] : pods_) {
    if (pod.node_name == node) out.push_back(pod);
  }
  return out;
}

Status FakeCluster::PatchNodeAnnotations(const std::string& node,
                                         const std::map<std::string, std::string>& annotations) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fail_patches_ > 0) {
    --fail_patches_;
    return Status::Unavailable("API server unavailable (injected)");
  }
  ++patches_;
  for (const auto& [k, v] : annotations) {
    node_annotations_[node][k] = v;
    history_[node + "/" + k].push_back(v);
  }
  return Status::Ok();
}

std::vector<std::string> FakeCluster::Events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

Status FakeCluster::PostNodeEvent(const std::string& node, const std::string& type,
                                  const std::string& reason, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(node + " " + type + " " + reason + ": " + message);
  return Status::Ok();
}

}  // namespace vgpu::node
