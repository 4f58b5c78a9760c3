#include "node/inventory.h"

#include <nlohmann/json.hpp>

#include "node/plugin/assignment.h"

namespace vgpu::node {

std::string InventoryJson(const NodeState& state, const std::string&) {
  // The extender's canonical order: GPUs by index, keys in a fixed order (nlohmann::ordered_json
  // keeps insertion order).
  nlohmann::ordered_json j;
  j["version"] = 1;
  j["gpus"] = nlohmann::ordered_json::array();
  const auto& rows = state.topology_rows();
  for (size_t i = 0; i < state.devices().size(); ++i) {
    const device::DeviceInfo& d = state.devices()[i];
    nlohmann::ordered_json g;
    g["uuid"] = d.uuid;
    g["index"] = d.index;
    g["model"] = d.name;
    g["memory_mib"] = d.memory_total_bytes >> 20;
    g["units"] = state.units_per_gpu();
    g["health"] = state.health().Healthy(d.uuid) ? "healthy" : "unhealthy";
    g["numa"] = d.numa_node;
    g["nvlink_peers"] = d.nvlink_peers;
    if (i < rows.size() && !rows[i].empty()) g["links"] = rows[i];
    // The MIG contract (k8s/gpu_inventory.h): "mode" when not shared, "mig" on MIG GPUs.
    k8s::GpuMode mode = state.Mode(d.index);
    if (mode != k8s::GpuMode::kShared) g["mode"] = std::string(k8s::GpuModeName(mode));
    if (mode == k8s::GpuMode::kMig || mode == k8s::GpuMode::kMigDynamic) {
      g["mig"] = nlohmann::ordered_json::array();
      for (const device::MigInstance& m : state.MigInstances(d.index)) {
        if (m.ci_id < 0) continue;  // half made: not usable
        nlohmann::ordered_json i;
        i["profile"] = m.profile;
        i["start"] = m.start;
        i["uuid"] = m.uuid;
        i["profile_id"] = m.profile_id;
        g["mig"].push_back(std::move(i));
      }
    }
    j["gpus"].push_back(std::move(g));
  }
  if (state.pcie_generation() > 0) {
    j["pcie"] = {{"generation", state.pcie_generation()}, {"width", state.pcie_width()}};
  }
  return j.dump();
}

InventoryPublisher::InventoryPublisher(ClusterClient* cluster, std::string node_name,
                                       std::string resource_name)
    : cluster_(cluster),
      node_name_(std::move(node_name)),
      resource_name_(std::move(resource_name)) {}

Status InventoryPublisher::Publish(const NodeState& state) {
  std::string text = InventoryJson(state, resource_name_);
  std::lock_guard<std::mutex> lock(mu_);
  if (text == last_published_) return Status::Ok();
  Status s = cluster_->PatchNodeAnnotations(node_name_, {{kInventoryAnnotation, text}});
  if (!s.ok()) return s.WithContext("publishing the GPU inventory of node " + node_name_);
  last_published_ = std::move(text);
  ++patches_;
  return Status::Ok();
}

uint64_t InventoryPublisher::patches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return patches_;
}

}  // namespace vgpu::node
