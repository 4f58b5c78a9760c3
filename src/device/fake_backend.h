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

  // MIG: gives GPU `index` these profiles (it then supports MIG, mode off; `toggles_at_once`
  // false: mode changes wait for ResetGpu, as on A100). Instances are checked for legal starts,
  // overlap and max counts like a real driver; ids follow NVML's look (see simgpu/mig_state.h).
  void SetMigProfiles(int index, std::vector<MigProfileInfo> profiles, bool toggles_at_once = true);
  void ResetGpu(int index);
  // Marks GPU `index` busy (a process on it): mode changes and destroys fail with IN_USE.
  void SetBusy(int index, bool busy);
  ComputeMode compute_mode(int index) const;
  // Calls that changed MIG state, e.g. "create 0 19@4", "destroy 0 11", "mode 0 on".
  std::vector<std::string> mig_calls() const;

  Result<MigModeState> GetMigMode(int index) override;
  Status SetMigMode(int index, bool enabled) override;
  Result<std::vector<MigProfileInfo>> MigProfiles(int index) override;
  Result<std::vector<MigInstance>> MigInstances(int index) override;
  Result<MigInstance> CreateMigInstance(int index, int profile_id, int start) override;
  Status DestroyMigInstance(int index, int gi_id) override;
  Status SetComputeMode(int index, ComputeMode mode) override;

  std::string Describe() const override;
  Result<std::vector<DeviceInfo>> Discover() override;
  Result<DeviceSample> Sample(int index) override;
  std::vector<HealthEvent> WaitForEvents(int timeout_ms) override;
  bool SupportsEvents() const override { return true; }
  // A reset makes a lost GPU answer again; counted by resets().
  Status Reset(int index) override;
  int resets() const;
  // Probe fails (kUnavailable, `message`) on GPU `index` until FailProbes(index, ""); else it is
  // a sample. Counted by probes().
  void FailProbes(int index, std::string message);
  Status Probe(int index) override;
  int probes() const;

  // The topology ReadTopology() returns; without one it is kUnavailable.
  void SetTopology(topo::Topology topology);
  Result<topo::Topology> ReadTopology() override;

 private:
  int resets_ = 0;
  int probes_ = 0;
  std::vector<std::string> probe_failures_;  // by index, grown on demand
  std::optional<topo::Topology> topology_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<DeviceInfo> devices_;
  std::vector<DeviceSample> samples_;
  std::vector<bool> lost_;
  std::deque<HealthEvent> events_;
  std::string discovery_error_;
  int discover_calls_ = 0;
  struct MigGpu {
    bool supported = false;
    bool toggles_at_once = true;
    MigModeState mode;
    bool busy = false;
    ComputeMode compute_mode = ComputeMode::kDefault;
    std::vector<MigProfileInfo> profiles;
    std::vector<MigInstance> instances;
  };
  std::vector<MigGpu> mig_;  // by index, grown on demand
  std::vector<std::string> mig_calls_;
  MigGpu& MigLocked(int index);
};

}  // namespace vgpu::device
