// InjectingBackend: wraps a DeviceBackend and lets an operator or a test inject health faults
// into it: events (an XID, a recovery) and "lost" GPUs whose Sample() fails. `vgpu node --sim`
// uses it over the simulated NVML, which has no fault events of its own.
//
// Injected events are returned by the next WaitForEvents() together with the wrapped backend's
// own; an injection wakes a waiting caller within ~100 ms.
//
// Over the simulated NVML (`sim_nvml_library`, the library the wrapped backend loaded) it also
// injects stuck kernels into the simulated GPU (simgpu/timeline.h: the next kernel of a process,
// or of any process, never ends until cleared), reports the kernel running on each GPU in
// Sample() (DeviceSample::running_kernel) and clears a GPU's stuck kernel when it resets it.
// Thread-safe.
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
  // `sim_nvml_library`: the simulated libnvidia-ml.so.1 (empty: no stuck kernels).
  explicit InjectingBackend(std::unique_ptr<DeviceBackend> inner,
                            const std::string& sim_nvml_library = "");

  void InjectEvent(HealthEvent event);
  // A lost GPU (by UUID) fails Sample() with kUnavailable until cleared.
  void SetLost(const std::string& uuid, bool lost);
  // The next kernel of host pid `pid` (0: of any process) on the GPU never ends until
  // ClearStuckKernel (or a reset). kFailedPrecondition when a kernel is stuck there already or
  // the backend is not the simulated GPU; kInvalidArgument for an unknown UUID.
  Status InjectStuckKernel(const std::string& uuid, uint32_t pid);
  // Ends the GPU's stuck kernel now; kNotFound when there is none.
  Status ClearStuckKernel(const std::string& uuid);

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
  int IndexOfLocked(const std::string& uuid) const;
  // The index of GPU `uuid` for a simulation call (`available`: the export was found).
  Result<unsigned> SimIndex(const std::string& uuid, bool available) const;

  int resets_ = 0;
  std::vector<std::string> uuids_;  // by index, from the last Discover()
  // The simulated NVML's fault exports (null when absent).
  using InjectStuckFn = int (*)(unsigned, unsigned);
  using ClearStuckFn = int (*)(unsigned);
  using RunningKernelFn = int (*)(unsigned, unsigned*, unsigned long long*);
  InjectStuckFn inject_stuck_ = nullptr;
  ClearStuckFn clear_stuck_ = nullptr;
  RunningKernelFn running_kernel_ = nullptr;
};

}  // namespace vgpu::device
