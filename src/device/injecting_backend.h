// InjectingBackend: wraps a DeviceBackend and lets an operator or a test inject health faults
// into it: events (an XID, a recovery) and "lost" GPUs whose Sample() fails. `vgpu node --sim`
// uses it over the simulated NVML, which has no fault events of its own.
//
// Injected events are returned by the next WaitForEvents() together with the wrapped backend's
// own; an injection wakes a waiting caller within ~100 ms. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "device/device_backend.h"

namespace vgpu::device {

class InjectingBackend final : public DeviceBackend {
 public:
  explicit InjectingBackend(std::unique_ptr<DeviceBackend> inner);

  void InjectEvent(HealthEvent event);
  // A lost GPU (by UUID) fails Sample() with kUnavailable until cleared.
  void SetLost(const std::string& uuid, bool lost);

  std::string Describe() const override;
  Result<std::vector<DeviceInfo>> Discover() override;
  Result<DeviceSample> Sample(int index) override;
  std::vector<HealthEvent> WaitForEvents(int timeout_ms) override;
  bool SupportsEvents() const override { return true; }
  Result<topo::Topology> ReadTopology() override { return inner_->ReadTopology(); }

 private:
  std::unique_ptr<DeviceBackend> inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<HealthEvent> events_;
  std::set<std::string> lost_;
  std::vector<std::string> uuids_;  // by index, from the last Discover()
};

}  // namespace vgpu::device
