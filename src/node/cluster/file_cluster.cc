#include "node/cluster/file_cluster.h"

#include <fstream>
#include <sstream>

#include "common/log.h"
#include "node/plugin/assignment.h"

namespace vgpu::node {

FileCluster::FileCluster(std::string pods_file) : pods_file_(std::move(pods_file)) {}

Result<std::vector<PodInfo>> FileCluster::ListPodsOnNode(const std::string& node) {
  if (pods_file_.empty()) return std::vector<PodInfo>{};
  std::ifstream in(pods_file_);
  if (!in) return Status::NotFound("cannot read " + pods_file_);
  std::stringstream text;
  text << in.rdbuf();
  auto pods = ParsePodListJson(text.str());
  if (!pods) return pods.error().WithContext(pods_file_);
  std::vector<PodInfo> out;
  for (PodInfo& p : *pods) {
    if (p.node_name == node) out.push_back(std::move(p));
  }
  return out;
}

Status FileCluster::PatchNodeAnnotations(const std::string& node,
                                         const std::map<std::string, std::string>& annotations) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [k, v] : annotations) {
    annotations_[k] = v;
    VGPU_LOG_INFO("node %s: annotation %s=%s", node.c_str(), k.c_str(), v.c_str());
  }
  return Status::Ok();
}

Status FileCluster::PostNodeEvent(const std::string& node, const std::string& type,
                                  const std::string& reason, const std::string& message) {
  VGPU_LOG_INFO("node %s: event %s %s: %s", node.c_str(), type.c_str(), reason.c_str(),
                message.c_str());
  return Status::Ok();
}

std::map<std::string, std::string> FileCluster::NodeAnnotations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return annotations_;
}

}  // namespace vgpu::node
