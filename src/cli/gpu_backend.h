// Opening the GPUs for the node-side daemons (`vgpu node`, `vgpu dra`): NVML from
// `nvml_library`, or with `sim` the simulated GPU's libraries (its device configuration from
// `sim_config` or a count of `sim_devices`), wrapped for fault injection. Errors name the flag
// (kInvalidArgument) or say why NVML could not be opened.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "device/device_backend.h"

namespace vgpu::cli {

struct GpuBackendRequest {
  bool sim = false;
  std::string nvml_library;  // used without `sim`
  std::string sim_config;    // --sim-config: a device configuration file; "" for none
  int sim_devices = 0;       // --sim-devices: a count when > 0 and no sim_config
};

Result<std::unique_ptr<device::DeviceBackend>> OpenGpuBackend(const GpuBackendRequest& request);

}  // namespace vgpu::cli
