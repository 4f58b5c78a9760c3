#include "cli/gpu_backend.h"

#include <cstdlib>
#include <filesystem>

#include "cli/cli_util.h"
#include "common/log.h"
#include "device/injecting_backend.h"
#include "device/nvml_backend.h"

namespace vgpu::cli {

namespace fs = std::filesystem;

Result<std::unique_ptr<device::DeviceBackend>> OpenGpuBackend(const GpuBackendRequest& r) {
  device::NvmlBackendOptions options;
  options.library_path = r.nvml_library;
  if (r.sim) {
    Result<std::string> sim_dir = SimulatedGpuDir("--sim");
    if (!sim_dir) return sim_dir.error();
    const fs::path dir = *sim_dir;
    if (!r.sim_config.empty()) {
      if (Status s = UseSimConfig(true, r.sim_config); !s.ok()) return s;
    } else if (r.sim_devices > 0) {
      setenv("VGPU_SIMGPU_DEVICES", std::to_string(r.sim_devices).c_str(), 1);
    }
    options.library_path = (dir / "libnvidia-ml.so.1").string();
    options.cuda_library_path = (dir / "libcuda.so.1").string();
  }
  auto nvml = device::NvmlBackend::Open(options);
  if (!nvml) {
    const std::string hint = r.nvml_library == "libnvidia-ml.so.1" ? NoDriverHint(r.sim) : "";
    return Status(nvml.error().code(), nvml.error().message() + hint);
  }
  for (const std::string& name : (*nvml)->MissingFunctions()) {
    VGPU_LOG_DEBUG("NVML lacks %s; the values it gives are not reported", name.c_str());
  }
  std::unique_ptr<device::DeviceBackend> backend = std::move(*nvml);
  if (r.sim) {
    backend = std::make_unique<device::InjectingBackend>(std::move(backend), options.library_path);
  }
  return backend;
}

}  // namespace vgpu::cli
