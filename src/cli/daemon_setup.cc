#include "cli/daemon_setup.h"

#include <unistd.h>

#include <cstdlib>

#include "cli/gpu_backend.h"
#include "common/log.h"

namespace vgpu::cli {

void AddDaemonGpuFlags(CLI::App& app, DaemonGpuFlags* f) {
  app.add_flag("--sim", f->sim, "Use the simulated GPU (build/lib/simgpu) instead of the driver");
  app.add_option("--sim-config", f->sim_config,
                 "Simulated devices (see docs/simgpu.md); needs --sim");
  app.add_option_function<int>(
      "--sim-devices",
      [f](const int& n) {
        f->sim_devices = n;
        f->sim_devices_given = true;
      },
      "Number of default simulated GPUs; needs --sim");
  app.add_option("--nvml-library", f->nvml_library, "NVML library to load")->capture_default_str();
}

Status CheckDaemonGpuFlags(const DaemonGpuFlags& f) {
  if (f.sim_devices_given && (f.sim_devices < 1 || f.sim_devices > 16)) {
    return Status::InvalidArgument("--sim-devices: must be 1..16, got " +
                                   std::to_string(f.sim_devices));
  }
  if (!f.sim && (!f.sim_config.empty() || f.sim_devices_given)) {
    return Status::InvalidArgument(
        std::string(f.sim_config.empty() ? "--sim-devices" : "--sim-config") + ": needs --sim");
  }
  return Status::Ok();
}

Result<std::unique_ptr<device::DeviceBackend>> OpenDaemonBackend(const DaemonGpuFlags& f) {
  return OpenGpuBackend({f.sim, f.nvml_library, f.sim_config, f.sim_devices});
}

void AddLogLevelFlag(CLI::App& app, int* level) {
  app.add_option("--log-level", *level, "0 silent, 1 errors, 2 warnings, 3 info, 4 debug")
      ->capture_default_str();
}

Status SetUpDaemonLog(int level, const char* tag) {
  if (level < 0 || level > 4) {
    return Status::InvalidArgument("--log-level: must be 0..4, got " + std::to_string(level));
  }
  SetLogLevel(static_cast<LogLevel>(level));
  SetLogTag(tag);
  return Status::Ok();
}

std::string DefaultNodeName() {
  if (const char* n = std::getenv("NODE_NAME"); n != nullptr && *n != '\0') return n;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') return host;
  return "";
}

StopSignals::StopSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

void StopSignals::Wait() {
  int signal = 0;
  sigwait(&signals_, &signal);
  VGPU_LOG_INFO("%s: shutting down", signal == SIGTERM ? "SIGTERM" : "SIGINT");
}

}  // namespace vgpu::cli
