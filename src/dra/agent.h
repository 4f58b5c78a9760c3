// Agent: the node-side loop of the DRA driver around Driver and PluginServer: GPU health (the
// node daemon's rules, node/health.h: driver events, failed samples, recovery) and the node's
// ResourceSlices, republished (a new pool generation) when a GPU's health changes, and retried
// every `publish_interval_ms` after a failed write. Start() publishes once before it returns
// (a failure is logged and retried). Stop() ends the thread. Thread-safe.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/device_backend.h"
#include "dra/gpu_offers.h"
#include "dra/kube_api.h"
#include "dra/resource_slices.h"
#include "node/health.h"

namespace vgpu::dra {

struct AgentOptions {
  int sample_interval_ms = 5000;
  int publish_interval_ms = 10000;
  node::HealthRules health{};
  std::string sysfs_root = "/sys";  // for the GPUs' PCIe roots
};

class Agent {
 public:
  // `backend` and `publisher` are not owned (publisher may be null: no API server).
  Agent(AgentOptions options, device::DeviceBackend* backend, std::vector<device::DeviceInfo> gpus,
        SlicePublisher* publisher);
  ~Agent();

  // What each GPU offers (dra/gpu_offers.h), by GPU position; call before Start(). Without it
  // every GPU offers its whole-GPU device only.
  void SetOffers(const std::vector<GpuOffer>& offers);
  void Start();
  void Stop();
  bool Healthy(const std::string& uuid) const { return health_.Healthy(uuid); }
  std::vector<SliceGpu> Gpus() const;

 private:
  void EventLoop();
  void SampleLoop();
  void Publish();
  bool WaitStop(int ms);

  AgentOptions options_;
  device::DeviceBackend* backend_;
  std::vector<SliceGpu> gpus_;
  SlicePublisher* publisher_;
  node::HealthTracker health_;
  std::vector<std::thread> threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool dirty_ = true;
};

// "pci0000:00" for a GPU at "0000:18:00.0": the first path element of its sysfs device path
// under <sysfs_root>/devices; "" when sysfs does not have it.
std::string PcieRootOf(const std::string& sysfs_root, const std::string& pci_bus_id);

}  // namespace vgpu::dra
