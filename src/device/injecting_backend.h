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
  // A simulated reset: the GPU answers again (a lost GPU is found), and its injected stuck
  // state is cleared. Probe fails while the GPU is lost, else asks the wrapped backend.
  Status Reset(int index) override;
  Status Probe(int index) override;
  // Counts the resets done (tests).
  int resets() const;

  // MIG and compute mode: the wrapped backend's.
  Result<MigModeState> GetMigMode(int index) override { return inner_->GetMigMode(index); }
  Status SetMigMode(int index, bool enabled) override { return inner_->SetMigMode(index, enabled); }
  Result<std::vector<MigProfileInfo>> MigProfiles(int index) override {
    return inner_->MigProfiles(index);
  }
  Result<std::vector<MigInstance>> MigInstances(int index) override {
    return inner_->MigInstances(index);
  }
  Result<MigInstance> CreateMigInstance(int index, int profile_id, int start) override {
    return inner_->CreateMigInstance(index, profile_id, start);
  }
  Status DestroyMigInstance(int index, int gi_id) override {
    return inner_->DestroyMigInstance(index, gi_id);
  }
  Status SetComputeMode(int index, ComputeMode mode) override {
    return inner_->SetComputeMode(index, mode);
  }
  Result<topo::Topology> ReadTopology() override { return inner_->ReadTopology(); }

 private:
  std::unique_ptr<DeviceBackend> inner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<HealthEvent> events_;
  std::set<std::string> lost_;
  int resets_ = 0;
  std::vector<std::string> uuids_;  // by index, from the last Discover()
};

}  // namespace vgpu::device
