// Internal interface of the simulated NVML (libnvidia-ml.so.1): devices are the configured
// simulated GPUs (CUDA_VISIBLE_DEVICES does not apply, as with the real NVML) and all figures come
// from the shared state that the simulated driver writes (shared_state.h, timeline.h).
#pragma once

#include <memory>
#include <mutex>

#include "common/nvml_api.h"
#include "simgpu/config.h"
#include "simgpu/shared_state.h"

#define SIMGPU_NVML_API extern "C" __attribute__((visibility("default")))

// The real handle type is an opaque pointer; the simulated one points at this.
struct nvmlDevice_st {
  unsigned int index;
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
};
Library& L();

// NVML_SUCCESS if initialized, else NVML_ERROR_UNINITIALIZED.
nvmlReturn_t CheckInit();
// Validates a handle and returns its device index in *index.
nvmlReturn_t CheckDevice(nvmlDevice_t device, unsigned* index);
const DeviceSpec& Spec(unsigned index);
// Current utilization percent of a device (slot < 0) or a process slot.
unsigned Utilization(unsigned index, int slot);
// Copies `text` into `out` of `length` bytes; NVML_ERROR_INSUFFICIENT_SIZE if it does not fit.
nvmlReturn_t CopyString(const std::string& text, char* out, unsigned length);

}  // namespace vgpu::simgpu::nvml
