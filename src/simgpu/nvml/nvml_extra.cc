// NVML: PCI identity, and modelled sensors. Temperature and power follow utilization (a device
// idles at 30 C and 10% of its power limit and reaches 75 C and 90% of it when busy all the time);
// clocks report the configured maxima.
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "simgpu/nvml/nvml_internal.h"
#include "simgpu/timeline.h"

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::nvml;

namespace {

// CheckDevice, and an output pointer that must not be null.
nvmlReturn_t CheckDeviceAndOut(nvmlDevice_t device, const void* out, unsigned* index) {
  if (nvmlReturn_t rc = CheckDevice(device, index); rc != NVML_SUCCESS) return rc;
  return out == nullptr ? NVML_ERROR_INVALID_ARGUMENT : NVML_SUCCESS;
}

}  // namespace

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, pci, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  const DeviceSpec& s = Spec(index);
  std::memset(pci, 0, sizeof(*pci));
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04x:%02x:%02x.0", s.pci_domain,
                s.pci_bus, s.pci_device);
  std::snprintf(pci->busId, sizeof(pci->busId), "%08x:%02x:%02x.0", s.pci_domain, s.pci_bus,
                s.pci_device);
  pci->domain = s.pci_domain;
  pci->bus = s.pci_bus;
  pci->device = s.pci_device;
  pci->pciDeviceId = s.pci_device_id;
  pci->pciSubSystemId = (s.pci_device_id & 0xffff0000u) | 0x10deu;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                                      nvmlTemperatureSensors_t sensorType,
                                                      unsigned int* temp) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, temp, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *temp = 30 + Utilization(index, -1) * 45 / 100;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, power, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  unsigned limit_mw = static_cast<unsigned>(Spec(index).power_w) * 1000;
  *power = limit_mw / 10 + limit_mw / 100 * 80 * Utilization(index, -1) / 100;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device,
                                                               unsigned int* limit) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, limit, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  *limit = static_cast<unsigned>(Spec(index).power_w) * 1000;
  return NVML_SUCCESS;
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device,
                                                             unsigned int* limit) {
  return nvmlDeviceGetPowerManagementLimit(device, limit);
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                                      unsigned int* limit) {
  return nvmlDeviceGetPowerManagementLimit(device, limit);
}

static nvmlReturn_t Clock(nvmlDevice_t device, nvmlClockType_t type, unsigned* clock) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, clock, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  const DeviceSpec& s = Spec(index);
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
      *clock = static_cast<unsigned>(s.clock_mhz);
      break;
    case NVML_CLOCK_MEM:
      *clock = static_cast<unsigned>(s.memory_clock_mhz);
      break;
    case NVML_CLOCK_VIDEO:
      *clock = static_cast<unsigned>(s.clock_mhz) * 85 / 100;
      break;
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                    unsigned int* clock) {
  return Clock(device, type, clock);
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                       unsigned int* clock) {
  return Clock(device, type, clock);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                                int* minor) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, major, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  if (minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *major = Spec(index).cc_major;
  *minor = Spec(index).cc_minor;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device,
                                                       nvmlDeviceArchitecture_t* arch) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, arch, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  int cc = Spec(index).cc_major * 10 + Spec(index).cc_minor;
  *arch = cc >= 90   ? NVML_DEVICE_ARCH_HOPPER
          : cc >= 89 ? NVML_DEVICE_ARCH_ADA
                     : NVML_DEVICE_ARCH_AMPERE;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, minor, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  *minor = index;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMemoryBusWidth(nvmlDevice_t device,
                                                         unsigned int* busWidth) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, busWidth, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  *busWidth = static_cast<unsigned>(Spec(index).bus_width_bits);
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device,
                                                         nvmlBAR1Memory_t* bar1Memory) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, bar1Memory, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  unsigned long long total = 1;
  while (total < Spec(index).memory_bytes) total <<= 1;
  bar1Memory->bar1Total = total;
  bar1Memory->bar1Used = 0;
  bar1Memory->bar1Free = total;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device,
                                                           nvmlPstates_t* pState) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, pState, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  *pState = NVML_PSTATE_0;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device,
                                                          nvmlEnableState_t* mode) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, mode, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  *mode = NVML_FEATURE_ENABLED;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t* current,
                                                  nvmlEnableState_t* pending) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, current, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  if (pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *current = NVML_FEATURE_ENABLED;
  *pending = NVML_FEATURE_ENABLED;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device,
                                                      nvmlEnableState_t* display) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, display, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  *display = NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t device,
                                                        nvmlEnableState_t* isActive) {
  return nvmlDeviceGetDisplayMode(device, isActive);
}

// No graphics or MPS clients on a simulated GPU.
static nvmlReturn_t NoProcesses(nvmlDevice_t device, unsigned* count) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, count, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  *count = 0;
  return NVML_SUCCESS;
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                                   unsigned int* infoCount,
                                                                   nvmlProcessInfo_v1_t* infos) {
  (void)infos;
  return NoProcesses(device, infoCount);
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                                      unsigned int* infoCount,
                                                                      nvmlProcessInfo_v2_t* infos) {
  (void)infos;
  return NoProcesses(device, infoCount);
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                                      unsigned int* infoCount,
                                                                      nvmlProcessInfo_t* infos) {
  (void)infos;
  return NoProcesses(device, infoCount);
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device,
                                                                     unsigned int* infoCount,
                                                                     nvmlProcessInfo_v1_t* infos) {
  (void)infos;
  return NoProcesses(device, infoCount);
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(
    nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_v2_t* infos) {
  (void)infos;
  return NoProcesses(device, infoCount);
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                        unsigned int* infoCount,
                                                                        nvmlProcessInfo_t* infos) {
  (void)infos;
  return NoProcesses(device, infoCount);
}

SIMGPU_NVML_API nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char* name,
                                                      unsigned int length) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (name == nullptr || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%u/comm", pid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return NVML_ERROR_NOT_FOUND;
  char comm[256] = {};
  size_t n = std::fread(comm, 1, sizeof(comm) - 1, f);
  std::fclose(f);
  while (n > 0 && (comm[n - 1] == '\n' || comm[n - 1] == '\0')) comm[--n] = '\0';
  std::snprintf(name, length, "%s", comm);
  return NVML_SUCCESS;
}

// --- Simulation only (not NVML calls): stuck kernels (simgpu/timeline.h) ---

// The next kernel of process `pid` (0: of any process) on device `index` never ends until
// vgpuSimgpuClearStuckKernel. NVML_ERROR_IN_USE when a kernel is stuck there already.
SIMGPU_NVML_API nvmlReturn_t vgpuSimgpuInjectStuckKernel(unsigned int index, unsigned int pid) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (index >= L().config.devices.size() || pid > 0x7FFFFFFFu) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(L().state.get());
  return ArmStuckKernel(L().state->layout(), static_cast<int>(index), static_cast<int32_t>(pid))
             ? NVML_SUCCESS
             : NVML_ERROR_IN_USE;
}

// Ends the stuck kernel of device `index` now (and disarms an injection that has not struck
// yet). NVML_ERROR_NOT_FOUND when there was none.
SIMGPU_NVML_API nvmlReturn_t vgpuSimgpuClearStuckKernel(unsigned int index) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (index >= L().config.devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(L().state.get());
  return ClearStuckKernel(L().state->layout(), static_cast<int>(index), MonotonicNs())
             ? NVML_SUCCESS
             : NVML_ERROR_NOT_FOUND;
}

// The kernel running on device `index` now: its process and how long it has run.
// NVML_ERROR_NOT_FOUND when the device is idle.
SIMGPU_NVML_API nvmlReturn_t vgpuSimgpuRunningKernel(unsigned int index, unsigned int* pid,
                                                     unsigned long long* running_ns) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (index >= L().config.devices.size() || pid == nullptr || running_ns == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  SharedState::Lock lock(L().state.get());
  const uint64_t now = MonotonicNs();
  RunningKernel k = FindRunningKernel(L().state->layout(), static_cast<int>(index), now);
  if (!k.running) return NVML_ERROR_NOT_FOUND;
  *pid = static_cast<unsigned>(k.pid);
  *running_ns = now - k.start_ns;
  return NVML_SUCCESS;
}

// PCIe throughput in KB/s, as NVML's over its last 20 ms: receive (counter 1) counts host-to-device
// copies and managed-memory faults, transmit (counter 0) device-to-host copies (write-backs of
// evicted managed pages are not counted). The simulation keeps byte totals; the rate is measured
// between this process's calls, over at least 20 ms (a call within 20 ms of the last measurement
// repeats it; the first call of a process reports 0).
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, unsigned int counter,
                                                         unsigned int* value) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDeviceAndOut(device, value, &index); rc != NVML_SUCCESS) {
    return rc;
  }
  if (counter > 1) return NVML_ERROR_INVALID_ARGUMENT;
  struct Last {
    uint64_t ns = 0, bytes = 0;
    unsigned kbps = 0;
  };
  static std::mutex mu;
  static std::map<std::pair<unsigned, unsigned>, Last> last;
  Library& l = L();
  uint64_t bytes = 0;
  {
    SharedState::Lock lock(l.state.get());
    const SharedStateLayout* s = l.state->layout();
    if (counter == 1) {
      bytes = s->devices[index].copy_bytes_total[0] + s->managed_link_bytes[index];
    } else {
      bytes = s->devices[index].copy_bytes_total[1];
    }
  }
  uint64_t now = MonotonicNs();
  std::lock_guard<std::mutex> guard(mu);
  Last& prev = last[{index, counter}];
  if (prev.ns != 0 && now - prev.ns < 20'000'000) {
    *value = prev.kbps;
    return NVML_SUCCESS;
  }
  uint64_t kbps = 0;
  if (prev.ns != 0 && bytes >= prev.bytes) {
    kbps = (bytes - prev.bytes) * 1'000'000'000ULL / (now - prev.ns) / 1024;
  }
  prev.ns = now;
  prev.bytes = bytes;
  prev.kbps = static_cast<unsigned>(kbps > 0xffffffffULL ? 0xffffffffULL : kbps);
  *value = prev.kbps;
  return NVML_SUCCESS;
}
