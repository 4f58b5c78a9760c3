// PodSync: keeps the AssignmentStore in step with the pods bound to this node.
//
// Refresh() lists the node's pods from the API server and updates the store. Concurrent callers
// share list calls (single flight): a caller returns after a list that started after it called,
// so a device-plugin request that missed its pod sees every pod bound before the miss, and 32
// simultaneous misses cost one or two list calls, not 32. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "node/assignment_store.h"
#include "node/cluster.h"

namespace vgpu::node {

class PodSync {
 public:
  PodSync(ClusterClient* cluster, std::string node_name, AssignmentStore* store);

  Status Refresh();

  // The pods of the last successful list (for metrics and slice housekeeping), and whether a
  // list has succeeded at all.
  std::vector<PodInfo> Pods() const;
  bool HasListed() const;
  uint64_t lists() const;

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
};

}  // namespace vgpu::node
