#include "node/cluster/pod_sync.h"

#include <set>

#include "common/log.h"

namespace vgpu::node {

PodSync::PodSync(ClusterClient* cluster, std::string node_name, AssignmentStore* store)
    : cluster_(cluster), node_name_(std::move(node_name)), store_(store) {}

Status PodSync::Refresh() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t want = started_ + 1;
  while (finished_ < want) {
    if (running_) {
      cv_.wait(lock);
      continue;
    }
    running_ = true;
    const uint64_t number = ++started_;
    lock.unlock();
    auto pods = cluster_->ListPodsOnNode(node_name_);
    Status status;
    if (pods.has_value()) {
      UpdateStore(*pods);
    } else {
      status = pods.error().WithContext("listing the pods of node " + node_name_);
    }
    lock.lock();
    if (pods.has_value()) {
      pods_ = std::move(*pods);
      listed_ = true;
    }
    last_status_ = status;
    finished_ = number;
    running_ = false;
    cv_.notify_all();
  }
  return last_status_;
}

void PodSync::UpdateStore(const std::vector<PodInfo>& pods) {
  std::vector<std::pair<std::string, std::string>> errors;
  {
    std::lock_guard<std::mutex> lock(update_mu_);
    errors = store_->Update(pods);
  }
  static std::mutex log_mu;
  static std::set<std::string> logged;
  for (const auto& [pod, why] : errors) {
    std::lock_guard<std::mutex> log_lock(log_mu);
    if (logged.insert(pod + why).second) {
      VGPU_LOG_WARN("pod %s: ignoring its GPU assignment: %s", pod.c_str(), why.c_str());
    }
  }
}

void PodSync::Apply(std::vector<PodInfo> pods) {
  UpdateStore(pods);
  std::lock_guard<std::mutex> lock(mu_);
  pods_ = std::move(pods);
  listed_ = true;
  ++applied_;
}

uint64_t PodSync::applied() const {
  std::lock_guard<std::mutex> lock(mu_);
  return applied_;
}

std::vector<PodInfo> PodSync::Pods() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pods_;
}

bool PodSync::HasListed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return listed_;
}

uint64_t PodSync::lists() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_;
}

}  // namespace vgpu::node
