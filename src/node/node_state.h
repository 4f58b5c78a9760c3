// NodeState: what the daemon knows about its GPUs at this moment, shared by the device plugin,
// the metrics endpoint and the inventory publisher:
//   - the GPUs found at startup (immutable afterwards) and the units each is split into;
//   - their health (HealthTracker) and the latest sample of each;
//   - a version number that changes whenever the unit list kubelet sees changes (health), with
//     a wait for ListAndWatch streams.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "device/device_backend.h"
#include "k8s/wire/gpu_inventory.h"
#include "node/health.h"

namespace vgpu::node {

struct UnitView {
  std::string id;
  bool healthy = true;
  int numa_node = -1;
};

class NodeState {
 public:
  NodeState(std::vector<device::DeviceInfo> devices, int units_per_gpu, HealthRules rules);

  const std::vector<device::DeviceInfo>& devices() const { return devices_; }
  int units_per_gpu() const { return units_per_gpu_; }
  HealthTracker& health() { return health_; }
  const HealthTracker& health() const { return health_; }

  // nullptr when no GPU of this node has that UUID.
  const device::DeviceInfo* FindByUuid(const std::string& uuid) const;

  // Each GPU's row of the `nvidia-smi topo -m` matrix (docs/topology.md), by device position;
  // empty when the topology is unknown. Set once, before the state is shared (Daemon::Start).
  void SetTopologyRows(std::vector<std::vector<std::string>> rows) {
    topology_rows_ = std::move(rows);
  }
  const std::vector<std::vector<std::string>>& topology_rows() const { return topology_rows_; }
  // The PCIe link of the slowest GPU as the driver tells it (0: unknown); set with the rows.
  void SetPcieLink(int generation, int width) {
    pcie_generation_ = generation;
    pcie_width_ = width;
  }
  int pcie_generation() const { return pcie_generation_; }
  int pcie_width() const { return pcie_width_; }

  // Every unit of every GPU, in GPU order, with the GPU's health (a cordoned GPU's units are
  // unhealthy).
  std::vector<UnitView> Units() const;
  // Cordons (or uncordons) the GPU `uuid` for the tuning rules (quarantine_gpu): kubelet is told
  // its units are unhealthy while cordoned, whatever its health. Notifies a change.
  void SetCordoned(const std::string& uuid, bool cordoned);
  bool Cordoned(const std::string& uuid) const;

  uint64_t version() const;
  // Increments the version and wakes WaitForChange() callers.
  void NotifyChanged();
  // Waits until the version differs from `seen`, Stop() is called, or `timeout_ms` passes.
  // Returns the current version.
  uint64_t WaitForChange(uint64_t seen, int timeout_ms) const;
  void Stop();
  bool stopped() const;

  // Each GPU's mode (shared unless set) and, on mig and mig-dynamic GPUs, the MIG profiles the
  // driver reports and the instances that exist now (kept current by the daemon).
  void SetMode(int index, k8s::GpuMode mode);
  k8s::GpuMode Mode(int index) const;
  void SetMigProfiles(int index, std::vector<device::MigProfileInfo> profiles);
  std::vector<device::MigProfileInfo> MigProfiles(int index) const;
  // A change of the instances (UUID, profile, placement) also changes the version, since the
  // MIG resources' device lists are made of them (MigDevices).
  void SetMigInstances(int index, std::vector<device::MigInstance> instances);
  std::vector<device::MigInstance> MigInstances(int index) const;
  // The device plugin's devices of NVIDIA's MIG resource for `profile` ("1g.18gb+me"): every
  // complete instance (with its compute instance) of that profile on a GPU in mode `mig`, in GPU
  // order, its MIG UUID as the ID and its parent GPU's health.
  std::vector<UnitView> MigDevices(const std::string& profile) const;
  // The profiles of the instances on GPUs in mode `mig`, sorted and distinct.
  std::vector<std::string> StaticMigProfiles() const;

  void StoreSample(int index, std::optional<device::DeviceSample> sample);
  // Latest sample per GPU index; std::nullopt where the last sample failed or none was taken.
  std::vector<std::optional<device::DeviceSample>> Samples() const;

 private:
  const std::vector<device::DeviceInfo> devices_;
  std::vector<std::vector<std::string>> topology_rows_;
  int pcie_generation_ = 0;
  int pcie_width_ = 0;
  const int units_per_gpu_;
  HealthTracker health_;
  mutable std::mutex mu_;
  std::set<std::string> cordoned_;  // guarded by mu_
  mutable std::condition_variable cv_;
  uint64_t version_ = 1;
  bool stopped_ = false;
  std::vector<std::optional<device::DeviceSample>> samples_;
  struct MigView {
    k8s::GpuMode mode = k8s::GpuMode::kShared;
    std::vector<device::MigProfileInfo> profiles;
    std::vector<device::MigInstance> instances;
  };
  std::vector<MigView> mig_;
};

}  // namespace vgpu::node
