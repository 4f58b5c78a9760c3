// ProbeSmCounts: the number of streaming multiprocessors of each GPU, read through the CUDA
// driver (NVML does not report it for whole GPUs). Loads `library` with dlopen, calls cuInit and
// cuDeviceGetAttribute; creates no context. Keys are normalised PCI bus ids ("0000:18:00.0").
// Errors (kUnavailable) when the driver library is missing or cuInit fails.
#pragma once

#include <map>
#include <string>

#include "common/result.h"

namespace vgpu::device {

Result<std::map<std::string, int>> ProbeSmCounts(const std::string& library);

}  // namespace vgpu::device
