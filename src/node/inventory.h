// The node's GPU inventory, published as the node annotation `vgpu.io/gpu-inventory` for the
// scheduler extender (format defined with the extender, docs/scheduler.md):
//
//   {"version": 1,
//    "gpus": [{"uuid": "GPU-...", "index": 0, "model": "NVIDIA H100 80GB HBM3",
//              "memory_mib": 81559, "units": 10, "health": "healthy", "numa": 0,
//              "nvlink_peers": ["GPU-..."]}]}
//
// InventoryPublisher patches the annotation only when its text changes (a health change, a
// restart with other settings), and retries a failed patch at the next Publish().
#pragma once

#include <mutex>
#include <string>

#include "node/cluster/cluster.h"
#include "node/node_state.h"

namespace vgpu::node {

std::string InventoryJson(const NodeState& state, const std::string& resource_name);

class InventoryPublisher {
 public:
  InventoryPublisher(ClusterClient* cluster, std::string node_name, std::string resource_name);

  // Publishes the inventory of `state` if it differs from the last published one.
  // Returns OK when nothing needed publishing.
  Status Publish(const NodeState& state);
  uint64_t patches() const;

 private:
  ClusterClient* cluster_;
  const std::string node_name_;
  const std::string resource_name_;
  mutable std::mutex mu_;
  std::string last_published_;
  uint64_t patches_ = 0;
};

}  // namespace vgpu::node
