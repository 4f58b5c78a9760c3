// Flags and setup shared by the node-side daemons (`vgpu node`, `vgpu dra`): the GPU flags
// (--sim, --sim-config, --sim-devices, --nvml-library) and --log-level, their checks, the node's
// default name, and the stop signals (SIGTERM, SIGINT) the daemons run until.
#pragma once

#include <signal.h>

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "common/result.h"
#include "common/status.h"
#include "device/device_backend.h"

namespace vgpu::cli {

// The GPUs a daemon opens: NVML from `nvml_library`, or with `sim` the simulated GPU.
struct DaemonGpuFlags {
  bool sim = false;
  std::string sim_config;
  int sim_devices = 0;
  bool sim_devices_given = false;  // set when --sim-devices is on the command line
  std::string nvml_library = "libnvidia-ml.so.1";
};

// Adds --sim, --sim-config, --sim-devices and --nvml-library, bound to `f` (which must outlive
// the parse).
void AddDaemonGpuFlags(CLI::App& app, DaemonGpuFlags* f);

// kInvalidArgument naming the flag: --sim-devices outside 1..16, or --sim-config / --sim-devices
// without --sim.
Status CheckDaemonGpuFlags(const DaemonGpuFlags& f);

// Opens the GPUs `f` names (OpenGpuBackend).
Result<std::unique_ptr<device::DeviceBackend>> OpenDaemonBackend(const DaemonGpuFlags& f);

// Adds --log-level (0 silent .. 4 debug, default 3), bound to `level`.
void AddLogLevelFlag(CLI::App& app, int* level);

// Applies --log-level `level` and tags every log line with `tag`; kInvalidArgument naming
// --log-level when `level` is outside 0..4 (the log is then left as it was).
Status SetUpDaemonLog(int level, const char* tag);

// $NODE_NAME when set and not empty, else the host name; "" when neither is known.
std::string DefaultNodeName();

// SIGTERM and SIGINT, blocked from construction in the constructing thread and every thread it
// starts afterwards, so that they end the daemon through Wait() rather than kill whichever
// thread they reach. Construct it before anything starts a thread (the NVML and CUDA libraries
// may).
class StopSignals {
 public:
  StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Waits for SIGTERM or SIGINT, then logs "<signal>: shutting down".
  void Wait();

 private:
  sigset_t signals_;
};

}  // namespace vgpu::cli
