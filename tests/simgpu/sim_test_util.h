// Helpers for the simulated GPU's tests: a private simulated machine per test process, worker
// processes, and NVML prototypes.
//
// The global environment (installed by linking sim_test_util.cc) writes a two-device config
//   device 0: H100-like, 8 GiB;   device 1: A100-like, 1 GiB, named "vgpu simulated small"
// into a fresh temporary directory, points VGPU_SIMGPU_CONFIG and VGPU_SIMGPU_STATE at it (so
// parallel test processes never share a device), and calls cuInit. Child processes inherit it.
#pragma once

#include <cuda.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "child_process.h"
#include "common/nvml_api.h"

namespace vgpu::simgpu::testing {

inline constexpr uint64_t kMiB = 1ULL << 20;
inline constexpr uint64_t kGiB = 1ULL << 30;
inline constexpr uint64_t kDevice0Bytes = 8 * kGiB;
inline constexpr uint64_t kDevice1Bytes = 1 * kGiB;

// The directory holding this process's config and state file.
const std::string& TestDir();

// Device memory in use on `ordinal`, as cuMemGetInfo reports it (all processes).
uint64_t UsedBytes(int ordinal = 0);

using vgpu::testing::NowMs;  // monotonic milliseconds

// A running simgpu_worker with pipes to its stdin and stdout: a ChildProcess (tests/intercept)
// of the worker's program, with its own default timeouts.
class Worker : public vgpu::testing::ChildProcess {
 public:
  // Starts the worker with `args`; `env` entries ("NAME=value") are added to the environment.
  explicit Worker(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

  // Next line of output without the newline; "" on end of file or after `timeout_ms`.
  std::string ReadLine(int timeout_ms = 10000) { return ChildProcess::ReadLine(timeout_ms); }
  // Waits for exit; returns the exit status, 128 + signal if killed, -1 on timeout.
  int Wait(int timeout_ms = 10000) { return ChildProcess::Wait(timeout_ms); }
};

// Runs a worker to completion and returns its whole output.
std::string RunWorker(const std::vector<std::string>& args,
                      const std::vector<std::string>& env = {}, int* exit_code = nullptr);

// A context on `ordinal` made current for the lifetime of the object (the primary context).
class ScopedContext {
 public:
  explicit ScopedContext(int ordinal = 0);
  ~ScopedContext();
  CUcontext get() const { return ctx_; }

 private:
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

}  // namespace vgpu::simgpu::testing

// The NVML entry points the tests call (libnvidia-ml.so.1 is linked directly).
extern "C" {
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t nvmlShutdown(void);
const char* nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* count,
                                                  nvmlProcessInfo_v1_t* infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_v2_t* infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t* samples,
                                             unsigned int* count, unsigned long long last_seen);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                      unsigned int* temp);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor);
nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, unsigned int counter,
                                         unsigned int* kilobytes_per_second);
nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name, unsigned int length);
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, int* brand);
}
