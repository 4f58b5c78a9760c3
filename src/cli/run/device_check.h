// Checking `vgpu run --device LIST` against the GPUs of this machine before anything runs.
//
// An index must be below the number of GPUs and a GPU- UUID must name one of them (MIG- UUIDs
// name MIG devices, which NVML lists elsewhere, and are passed on unchecked). Errors are
// kInvalidArgument naming the flag, the value and what the machine has ("--device: 99: this
// machine has 1 GPU (indices 0-0)").
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "device/device_backend.h"

namespace vgpu::cli {

// Pure check of `devices` (indices or UUIDs, as slice::ParseSliceSpec gives them) against `gpus`.
Status CheckDeviceList(const std::vector<std::string>& devices,
                       const std::vector<device::DeviceInfo>& gpus);

// Lists this machine's GPUs through NVML (`nvml_path`: a dlopen name or path; NVML is shut down
// again before returning) and checks `devices` against them. When NVML cannot be loaded or
// answer, nothing can be checked: returns OK and sets `*warning` to say so.
Status CheckDevicesOnThisMachine(const std::vector<std::string>& devices,
                                 const std::string& nvml_path, std::string* warning);

}  // namespace vgpu::cli
