#include "cli/run/device_check.h"

#include <algorithm>

#include "device/nvml_backend.h"

namespace vgpu::cli {

Status CheckDeviceList(const std::vector<std::string>& devices,
                       const std::vector<device::DeviceInfo>& gpus) {
  const std::string have =
      gpus.empty()
          ? "this machine has no GPU"
          : "this machine has " + std::to_string(gpus.size()) +
                (gpus.size() == 1 ? " GPU (index 0)"
                                  : " GPUs (indices 0-" + std::to_string(gpus.size() - 1) + ")");
  for (const std::string& d : devices) {
    if (d.rfind("MIG-", 0) == 0) continue;
    if (d.rfind("GPU-", 0) == 0) {
      bool found = std::any_of(gpus.begin(), gpus.end(),
                               [&](const device::DeviceInfo& g) { return g.uuid == d; });
      if (!found)
        return Status::InvalidArgument("--device: " + d + ": no GPU has this UUID; " + have);
      continue;
    }
    // An index: ParseSliceSpec (slice/spec.h) admits digits only; a long one is out of range too.
    if (d.size() > 6 || std::stoul(d) >= gpus.size()) {
      return Status::InvalidArgument("--device: " + d + ": no such GPU index; " + have);
    }
  }
  return Status::Ok();
}

Status CheckDevicesOnThisMachine(const std::vector<std::string>& devices,
                                 const std::string& nvml_path, std::string* warning) {
  if (devices.empty()) return Status::Ok();
  device::NvmlBackendOptions options;
  options.library_path = nvml_path;
  options.cuda_library_path.clear();
  auto backend = device::NvmlBackend::Open(options);
  if (!backend) {
    *warning = "cannot check --device against this machine's GPUs: " + backend.error().message();
    return Status::Ok();
  }
  auto gpus = (*backend)->Discover();
  if (!gpus) {
    *warning = "cannot check --device: NVML did not list the GPUs: " + gpus.error().message();
    return Status::Ok();
  }
  return CheckDeviceList(devices, *gpus);
}

}  // namespace vgpu::cli
