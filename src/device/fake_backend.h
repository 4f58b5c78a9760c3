// FakeBackend: a scriptable DeviceBackend for tests and for `vgpu node` demos without NVML.
//
// Tests add GPUs, set what Sample() returns, make a GPU stop answering (SetLost), and inject
// health events that the next WaitForEvents() returns. All methods are thread-safe; injected
// events wake a blocked WaitForEvents() at once.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "device/device_backend.h"

namespace vgpu::device {

class FakeBackend final : public DeviceBackend {
 public:
  FakeBackend() = default;

  // Adds a GPU; its index is set to its position. Returns the index.
  int AddDevice(DeviceInfo info);
  // Adds `count` H100-like GPUs with stable UUIDs derived from `seed` (helper for tests).
  void AddDefaultDevices(int count, uint64_t memory_bytes = 80ULL << 30, int seed = 0);

  void SetSample(int index, const DeviceSample& sample);
  void SetUtilization(int index, double sm, double memory_bandwidth);
  void SetMemoryUsed(int index, uint64_t bytes);
  void SetProcesses(int index, std::vector<ProcessUsage> processes);
  // A lost GPU fails Sample() with kUnavailable until SetLost(index, false).
  void SetLost(int index, bool lost);
  void InjectEvent(HealthEvent event);
  // Convenience: an XID on GPU `index`.
  void InjectXid(int index, uint64_t xid);
  // Makes Discover() fail (a driver that does not load).
  void FailDiscovery(std::string message);

  int discover_calls() const;

  std::string Describe() const override;
  Result<std::vector<DeviceInfo>> Discover() override;
  Result<DeviceSample> Sample(int index) override;
  std::vector<HealthEvent> WaitForEvents(int timeout_ms) override;
  bool SupportsEvents() const override { return true; }
  // The topology ReadTopology() returns; without one it is kUnavailable.
  void SetTopology(topo::Topology topology);
  Result<topo::Topology> ReadTopology() override;

 private:
  std::optional<topo::Topology> topology_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<DeviceInfo> devices_;
  std::vector<DeviceSample> samples_;
  std::vector<bool> lost_;
  std::deque<HealthEvent> events_;
  std::string discovery_error_;
  int discover_calls_ = 0;
};

}  // namespace vgpu::device
