// Internal interface of the simulated NVML (libnvidia-ml.so.1): devices are the configured
// simulated GPUs (CUDA_VISIBLE_DEVICES does not apply, as with the real NVML) and all figures come
// from the shared state that the simulated driver writes (shared_state.h, timeline.h).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "common/nvml_api.h"
#include "simgpu/config.h"
#include "simgpu/shared_state.h"

#define SIMGPU_NVML_API extern "C" __attribute__((visibility("default")))

// The real handle type is an opaque pointer; the simulated one points at this. MIG device
// handles (mig = true) name a compute instance: GPU instance `slot`, compute instance `ci`,
// valid while that compute instance's generation is `generation` (later: stale).
struct nvmlDevice_st {
  unsigned int index;  // the configured (parent) device
  bool mig = false;
  int slot = -1;
  int ci = -1;
  uint32_t generation = 0;
};
struct nvmlGpuInstance_st {
  unsigned int parent;
  int slot;
  uint32_t generation;
};
struct nvmlComputeInstance_st {
  unsigned int parent;
  int slot;
  int ci;
  uint32_t generation;
};

namespace vgpu::simgpu::nvml {

// Utilization is averaged over this window, as NVML's "past sample period".
inline constexpr uint64_t kUtilizationWindowNs = 1'000'000'000;

struct Library {
  std::mutex mu;
  int init_count = 0;
  Config config;
  std::unique_ptr<SharedState> state;
  nvmlDevice_st devices[kMaxDevices];
  // MIG handles, made on demand and never freed (so a stale one stays safe to read). Keyed by
  // (slot, ci, generation). Guarded by mu.
  std::map<std::tuple<int, int, uint32_t>, std::unique_ptr<nvmlDevice_st>> mig_devices;
  std::map<std::tuple<int, uint32_t>, std::unique_ptr<nvmlGpuInstance_st>> gpu_instances;
  std::map<std::tuple<int, int, uint32_t>, std::unique_ptr<nvmlComputeInstance_st>>
      compute_instances;
};
Library& L();

// NVML_SUCCESS if initialized, else NVML_ERROR_UNINITIALIZED.
nvmlReturn_t CheckInit();
// Validates a handle of a configured device (not a MIG device) and returns its index in *index.
nvmlReturn_t CheckDevice(nvmlDevice_t device, unsigned* index);
// A device or MIG device handle: *index is the (parent) device, *record the shared-state device
// record it uses (the GPU instance's for a MIG device), *mig whether it is a MIG device.
// INVALID_ARGUMENT for an unknown or stale handle.
nvmlReturn_t CheckAnyDevice(nvmlDevice_t device, unsigned* index, int* record, bool* mig);
// True if the configured device `index` has MIG enabled now.
bool MigEnabled(unsigned index);
// Identity of a MIG device handle that CheckAnyDevice accepted.
std::string MigDeviceUuid(nvmlDevice_t mig_device);
std::string MigDeviceName(nvmlDevice_t mig_device);  // "<parent name> MIG 1g.18gb"
// The MIG device whose UUID is `uuid`, or NVML_ERROR_NOT_FOUND.
nvmlReturn_t FindMigDeviceByUuid(const char* uuid, nvmlDevice_t* device);
const DeviceSpec& Spec(unsigned index);
// Current utilization percent of a device (slot < 0) or a process slot.
unsigned Utilization(unsigned index, int slot);
// Copies `text` into `out` of `length` bytes; NVML_ERROR_INSUFFICIENT_SIZE if it does not fit.
nvmlReturn_t CopyString(const std::string& text, char* out, unsigned length);

}  // namespace vgpu::simgpu::nvml
