// PodSync: keeps the AssignmentStore in step with the pods bound to this node.
//
// Refresh() lists the node's pods from the API server and updates the store. Concurrent callers
// share list calls (single flight): a caller returns after a list that started after it called,
// so a device-plugin request that missed its pod sees every pod bound before the miss, and 32
// simultaneous misses cost one or two list calls, not 32. Thread-safe.
//
// Apply() takes the node's pods from a watch (ClusterClient::WatchPodsOnNode) instead of a
// list: the store sees a just-bound pod as soon as its watch event arrives. Refresh() stays
// the fallback of a device-plugin request that misses its pod.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "node/cluster/cluster.h"
#include "node/plugin/assignment_store.h"

namespace vgpu::node {

class PodSync {
 public:
  PodSync(ClusterClient* cluster, std::string node_name, AssignmentStore* store);

  Status Refresh();
  // Updates the store with `pods`, all the pods of the node (from a watch).
  void Apply(std::vector<PodInfo> pods);

  // The pods of the last successful list (for metrics and slice housekeeping), and whether a
  // list has succeeded at all.
  std::vector<PodInfo> Pods() const;
  bool HasListed() const;
  uint64_t lists() const;
  uint64_t applied() const;

 private:
  ClusterClient* cluster_;
  std::string node_name_;
  AssignmentStore* store_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t started_ = 0;
  uint64_t finished_ = 0;
  bool running_ = false;
  Status last_status_;
  std::vector<PodInfo> pods_;
  bool listed_ = false;
  uint64_t applied_ = 0;
  // Serialises store updates, so that a list and a watch event do not interleave halfway.
  std::mutex update_mu_;

  void UpdateStore(const std::vector<PodInfo>& pods);
};

}  // namespace vgpu::node
