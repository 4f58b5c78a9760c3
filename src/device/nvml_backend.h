// NvmlBackend: the DeviceBackend over NVIDIA's NVML, loaded with dlopen at run time (nvml.h is
// not needed to build, and a machine without the driver still runs the daemon's other parts).
//
// This is the only code of the node daemon that calls NVML. Entry points are looked up one by
// one: the handful without which nothing works (init, device count, handles, UUID) must exist;
// every other one may be missing or answer NVML_ERROR_NOT_SUPPORTED, and the field it feeds is
// then left empty (std::nullopt) rather than failing the whole sample. This lets the same code
// run on datacenter GPUs, consumer GPUs (no NVLink, no ECC events) and the simulated GPU.
//
// GPM metrics (Hopper and later: SM, tensor and DRAM activity, PCIe and NVLink rates) come
// with each sample, for the GPU and each of its MIG GPU instances (nvml_gpm.h); so do clocks,
// device memory temperature, energy, video engine utilization and row remapping
// (nvml_sensors.h).
//
// SM counts are not in NVML for whole GPUs; they are read through the CUDA driver
// (cuDeviceGetAttribute, matched by PCI bus id) when libcuda.so.1 loads, else left 0.
// NUMA nodes come from nvmlDeviceGetNumaNodeId or, failing that, sysfs.
//
// Thread safety: NVML is thread-safe; the backend's own state (handles, event set) is set up
// in Open()/Discover() under a mutex, and WaitForEvents() is meant for one health thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/device_backend.h"
#include "device/nvml_gpm.h"
#include "device/nvml_sensors.h"

namespace vgpu::device {

struct NvmlBackendOptions {
  // dlopen name or path of NVML.
  std::string library_path = "libnvidia-ml.so.1";
  // dlopen name or path of the CUDA driver, used for SM counts and the recovery probe; empty: do
  // not load it (the probe is then a sample).
  std::string cuda_library_path = "libcuda.so.1";
  // How long the recovery probe's copy, kernel and copy may take (cuda_probe.h ProbeGpuWork).
  int probe_timeout_ms = 5000;
  // Root of sysfs, for the NUMA-node fallback (tests point it elsewhere).
  std::string sysfs_root = "/sys";
};

class NvmlBackend final : public DeviceBackend {
 public:
  // Loads NVML and initialises it. kUnavailable when the library or the driver is missing.
  static Result<std::unique_ptr<NvmlBackend>> Open(const NvmlBackendOptions& options);
  ~NvmlBackend() override;

  std::string Describe() const override;
  Result<std::vector<DeviceInfo>> Discover() override;
  Result<DeviceSample> Sample(int index) override;
  std::vector<HealthEvent> WaitForEvents(int timeout_ms) override;
  bool SupportsEvents() const override;
  // From nvmlDeviceGetTopologyCommonAncestor, nvmlDeviceGetP2PStatus and the NVLink calls (a
  // link whose remote device type is SWITCH counts as an NVSwitch link); CPU affinity from sysfs
  // (local_cpulist). Calls Discover() first. nvml_topology.cc.
  Result<topo::Topology> ReadTopology() override;

  // MIG through NVML (nvml_backend_mig.cc). Missing entry points: kFailedPrecondition.
  Result<MigModeState> GetMigMode(int index) override;
  Status SetMigMode(int index, bool enabled) override;
  Result<std::vector<MigProfileInfo>> MigProfiles(int index) override;
  Result<std::vector<MigInstance>> MigInstances(int index) override;
  Result<MigInstance> CreateMigInstance(int index, int profile_id, int start) override;
  Status DestroyMigInstance(int index, int gi_id) override;
  Status SetComputeMode(int index, ComputeMode mode) override;

  // The recovery probe: a sample, then an allocation, copy, kernel and copy through the CUDA
  // driver (cuda_probe.h ProbeGpuWork) on the GPU; a GPU in MIG mode (whose instances are no CUDA
  // devices to the node) or a backend without the CUDA driver is probed by the sample alone.
  Status Probe(int index) override;

  // Names of the optional entry points this NVML lacks (for the startup log).
  std::vector<std::string> MissingFunctions() const;

  struct Api;     // the loaded entry points (nvml_backend.cc)
  struct MigApi;  // the MIG entry points (nvml_backend_mig.cc)

 private:
  NvmlBackend(NvmlBackendOptions options, std::unique_ptr<Api> api);
  void SetUpEvents();
  // The handle of GPU `index` (after Discover), or null.
  void* Handle(int index) const;
  // The handle of GPU `index` for a MIG call: FailedPrecondition when this NVML has no MIG entry
  // points, NotFound for no such GPU (nvml_backend_mig.cc).
  Result<void*> MigHandle(int index) const;
  std::string NvmlError(int code) const;
  void* LibraryHandle() const;

  NvmlBackendOptions options_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<MigApi> mig_;
  std::unique_ptr<GpmSampler> gpm_;       // GPM (nvml_gpm.h)
  std::unique_ptr<NvmlSensors> sensors_;  // clocks, energy, ... (nvml_sensors.h)
  mutable std::mutex mu_;
  std::vector<void*> handles_;  // nvmlDevice_t per index, filled by Discover()
  std::vector<std::string> uuids_;
  std::vector<std::string> bus_ids_;
  void* event_set_ = nullptr;  // nvmlEventSet_t, or null without event support
  bool events_set_up_ = false;
  std::string version_;
};

// "00000000:18:00.0" or "0000:18:00.0" (any case) to "0000:18:00.0"; unchanged if it does not
// look like a PCI address.
std::string NormalizePciBusId(const std::string& bus_id);

}  // namespace vgpu::device
