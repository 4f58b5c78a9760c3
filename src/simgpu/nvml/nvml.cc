// NVML: initialization, device handles, identity, memory, processes and utilization.
#include <sys/time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "simgpu/nvml/nvml_internal.h"
#include "simgpu/timeline.h"

namespace vgpu::simgpu::nvml {
namespace {

nvmlReturn_t Init() {
  Library& l = L();
  std::lock_guard<std::mutex> lock(l.mu);
  if (l.init_count > 0) {
    l.init_count++;
    return NVML_SUCCESS;
  }
  SetLogTag("vgpu-simgpu");
  LogLevel level = LogLevel::kInfo;
  if (const char* v = std::getenv("VGPU_SIMGPU_LOG_LEVEL");
      v != nullptr && v[0] >= '0' && v[0] <= '4' && v[1] == '\0') {
    level = static_cast<LogLevel>(v[0] - '0');
  }
  SetLogLevel(level);
  Result<Config> config = LoadConfigFromEnvironment();
  if (!config) {
    VGPU_LOG_ERROR("simulated NVML: %s", config.error().message().c_str());
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  Result<std::unique_ptr<SharedState>> state =
      SharedState::Open(*config, SharedState::DefaultPath(*config));
  if (!state) {
    VGPU_LOG_ERROR("simulated NVML: %s", state.error().message().c_str());
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  l.config = std::move(*config);
  l.state = std::move(*state);
  for (unsigned i = 0; i < kMaxDevices; ++i) l.devices[i].index = i;
  l.init_count = 1;
  VGPU_LOG_INFO(
      "SIMULATED GPU: this libnvidia-ml is vgpu's simulation, not NVIDIA's (%zu device(s), "
      "%s, state %s)",
      l.config.devices.size(), l.config.source.c_str(), l.state->path().c_str());
  return NVML_SUCCESS;
}

struct ProcessRow {
  unsigned pid;
  unsigned long long used;
  int slot;
  unsigned gi_id;  // 0xFFFFFFFF without MIG
  unsigned ci_id;
};

// Processes with a context or memory on device record `record`, dead ones reclaimed first. For
// a configured device (record < kMaxDevices) the processes on its MIG instances count too, with
// their instance ids.
std::vector<ProcessRow> Processes(int record) {
  Library& l = L();
  std::vector<ProcessRow> rows;
  SharedState::Lock lock(l.state.get());
  l.state->MaybeReclaim(MonotonicNs());
  const SharedStateLayout* s = l.state->layout();
  std::vector<int> records = {record};
  if (record < kMaxDevices) {
    for (int g = 0; g < kMaxMigInstances; ++g) {
      const MigGpuInstanceRecord& gi = s->mig_instances[g];
      if (gi.used != 0 && static_cast<int>(gi.parent) == record) records.push_back(kMaxDevices + g);
    }
  }
  for (int r : records) {
    unsigned gi_id = 0xFFFFFFFFu, ci_id = 0xFFFFFFFFu;
    if (r >= kMaxDevices) {
      const MigGpuInstanceRecord& gi = s->mig_instances[r - kMaxDevices];
      gi_id = gi.id;
      for (const MigComputeRecord& c : gi.cis) {
        if (c.used != 0) {
          ci_id = c.id;
          break;
        }
      }
    }
    for (int i = 0; i < kMaxProcesses; ++i) {
      const ProcessRecord& p = s->processes[i];
      if (p.pid == 0 || (p.contexts[r] == 0 && p.used_bytes[r] == 0)) continue;
      rows.push_back({static_cast<unsigned>(p.pid), p.used_bytes[r], i, gi_id, ci_id});
    }
  }
  return rows;
}

template <typename Info>
nvmlReturn_t RunningProcesses(nvmlDevice_t device, unsigned* count, Info* infos, bool extended) {
  unsigned index = 0;
  int record = 0;
  bool mig = false;
  if (nvmlReturn_t rc = CheckAnyDevice(device, &index, &record, &mig); rc != NVML_SUCCESS) {
    return rc;
  }
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<ProcessRow> rows = Processes(record);
  unsigned capacity = *count;
  *count = static_cast<unsigned>(rows.size());
  if (rows.size() > capacity || (infos == nullptr && !rows.empty())) {
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memset(&infos[i], 0, sizeof(Info));
    infos[i].pid = rows[i].pid;
    infos[i].usedGpuMemory = rows[i].used;
    if constexpr (sizeof(Info) >= sizeof(nvmlProcessInfo_v2_t)) {
      if (extended) {
        infos[i].gpuInstanceId = rows[i].gi_id;
        infos[i].computeInstanceId = rows[i].ci_id;
      }
    }
  }
  return NVML_SUCCESS;
}

// A MIG device reports its GPU instance's memory; a MIG-enabled GPU its own total and what all
// its instances use.
nvmlReturn_t MemoryInfo(nvmlDevice_t device, unsigned long long* total, unsigned long long* used) {
  unsigned index = 0;
  int record = 0;
  bool mig = false;
  if (nvmlReturn_t rc = CheckAnyDevice(device, &index, &record, &mig); rc != NVML_SUCCESS) {
    return rc;
  }
  Library& l = L();
  SharedState::Lock lock(l.state.get());
  l.state->MaybeReclaim(MonotonicNs());
  const SharedStateLayout* s = l.state->layout();
  *total = s->devices[record].total_bytes;
  *used = s->devices[record].used_bytes;
  if (!mig) {
    for (int g = 0; g < kMaxMigInstances; ++g) {
      if (s->mig_instances[g].used != 0 && s->mig_instances[g].parent == index) {
        *used += s->devices[kMaxDevices + g].used_bytes;
      }
    }
  }
  if (*used > *total) *used = *total;
  return NVML_SUCCESS;
}

uint64_t RealtimeMicros() {
  timeval tv;
  gettimeofday(&tv, nullptr);
  return static_cast<uint64_t>(tv.tv_sec) * 1'000'000ULL + static_cast<uint64_t>(tv.tv_usec);
}

}  // namespace

Library& L() {
  static Library* library = new Library;
  return *library;
}

nvmlReturn_t CheckInit() { return L().init_count > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED; }

nvmlReturn_t CheckDevice(nvmlDevice_t device, unsigned* index) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  Library& l = L();
  if (device < &l.devices[0] || device >= &l.devices[l.config.devices.size()]) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *index = device->index;
  return NVML_SUCCESS;
}

const DeviceSpec& Spec(unsigned index) { return L().config.devices[index]; }

unsigned Utilization(unsigned index, int slot) {
  Library& l = L();
  SharedState::Lock lock(l.state.get());
  return UtilizationPercent(l.state->layout(), static_cast<int>(index), slot, MonotonicNs(),
                            kUtilizationWindowNs);
}

nvmlReturn_t CopyString(const std::string& text, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

}  // namespace vgpu::simgpu::nvml

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::nvml;

SIMGPU_NVML_API nvmlReturn_t nvmlInit_v2(void) { return Init(); }
SIMGPU_NVML_API nvmlReturn_t nvmlInit(void) { return Init(); }
SIMGPU_NVML_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  (void)flags;  // NO_GPUS / NO_ATTACH change nothing for simulated devices
  return Init();
}

SIMGPU_NVML_API nvmlReturn_t nvmlShutdown(void) {
  Library& l = L();
  std::lock_guard<std::mutex> lock(l.mu);
  if (l.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  l.init_count--;  // the state stays mapped: handles held elsewhere remain safe to read
  return NVML_SUCCESS;
}

SIMGPU_NVML_API const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported (by the simulated GPU)";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument Version Mismatch";
    case NVML_ERROR_NO_DATA:
      return "No Data";
    case NVML_ERROR_RESET_REQUIRED:
      return "The GPU requires a reset before it can be used again";
    case NVML_ERROR_IN_USE:
      return "An operation cannot be performed because the GPU is currently in use";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Ran out of critical resources, other than memory";
    case NVML_ERROR_MEMORY:
      return "Insufficient memory";
    case NVML_ERROR_UNKNOWN:
      return "Unknown Error";
    default:
      return "Unknown Error";
  }
}

SIMGPU_NVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  return CopyString("580.00.00-simgpu", version, length);
}

SIMGPU_NVML_API nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return CopyString("13.580.00-simgpu", version, length);
}

SIMGPU_NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = 13000;
  return NVML_SUCCESS;
}
SIMGPU_NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = static_cast<unsigned>(L().config.devices.size());
  return NVML_SUCCESS;
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  return nvmlDeviceGetCount_v2(deviceCount);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                           nvmlDevice_t* device) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (device == nullptr || index >= L().config.devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &L().devices[index];
  return NVML_SUCCESS;
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < L().config.devices.size(); ++i) {
    if (L().config.devices[i].uuid == uuid) {
      *device = &L().devices[i];
      return NVML_SUCCESS;
    }
  }
  if (std::strncmp(uuid, "MIG-", 4) == 0) return FindMigDeviceByUuid(uuid, device);
  return NVML_ERROR_NOT_FOUND;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId,
                                                              nvmlDevice_t* device) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (pciBusId == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < L().config.devices.size(); ++i) {
    const DeviceSpec& s = L().config.devices[i];
    if (s.pci_domain == domain && s.pci_bus == bus && s.pci_device == dev && fn == 0) {
      *device = &L().devices[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pciBusId,
                                                           nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  unsigned i = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &i); rc != NVML_SUCCESS) return rc;
  if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *index = i;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                               unsigned int length) {
  unsigned i = 0;
  int record = 0;
  bool mig = false;
  if (nvmlReturn_t rc = CheckAnyDevice(device, &i, &record, &mig); rc != NVML_SUCCESS) return rc;
  return CopyString(mig ? MigDeviceName(device) : Spec(i).name, name, length);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                               unsigned int length) {
  unsigned i = 0;
  int record = 0;
  bool mig = false;
  if (nvmlReturn_t rc = CheckAnyDevice(device, &i, &record, &mig); rc != NVML_SUCCESS) return rc;
  return CopyString(mig ? MigDeviceUuid(device) : Spec(i).uuid, uuid, length);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned long long total = 0, used = 0;
  if (nvmlReturn_t rc = MemoryInfo(device, &total, &used); rc != NVML_SUCCESS) return rc;
  memory->total = total;
  memory->used = used;
  memory->free = total - used;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                        nvmlMemory_v2_t* memory) {
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  unsigned long long total = 0, used = 0;
  if (nvmlReturn_t rc = MemoryInfo(device, &total, &used); rc != NVML_SUCCESS) return rc;
  memory->total = total;
  memory->reserved = 0;  // the simulated driver keeps no memory for itself
  memory->used = used;
  memory->free = total - used;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                                  unsigned int* infoCount,
                                                                  nvmlProcessInfo_v1_t* infos) {
  return RunningProcesses(device, infoCount, infos, false);
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                     unsigned int* infoCount,
                                                                     nvmlProcessInfo_v2_t* infos) {
  return RunningProcesses(device, infoCount, infos, true);
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                     unsigned int* infoCount,
                                                                     nvmlProcessInfo_t* infos) {
  return RunningProcesses(device, infoCount, infos, true);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                           nvmlUtilization_t* utilization) {
  unsigned i = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &i); rc != NVML_SUCCESS) return rc;
  if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (MigEnabled(i)) return NVML_ERROR_NOT_SUPPORTED;  // as NVML on MIG-enabled GPUs
  utilization->gpu = Utilization(i, -1);
  utilization->memory = 0;  // memory-controller activity is not simulated
  return NVML_SUCCESS;
}

// One sample per process that ran kernels since `lastSeenTimeStamp` (CPU time in microseconds),
// over at most the last second.
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
    unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (processSamplesCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (MigEnabled(index)) return NVML_ERROR_NOT_SUPPORTED;
  uint64_t now_us = RealtimeMicros();
  uint64_t now = MonotonicNs();
  uint64_t window = kUtilizationWindowNs;
  if (lastSeenTimeStamp != 0 && lastSeenTimeStamp < now_us) {
    window = std::min<uint64_t>(window, (now_us - lastSeenTimeStamp) * 1000);
  }
  window = std::max<uint64_t>(window, kUtilBucketNs);
  std::vector<nvmlProcessUtilizationSample_t> samples;
  {
    Library& l = L();
    SharedState::Lock lock(l.state.get());
    l.state->MaybeReclaim(now);
    SharedStateLayout* s = l.state->layout();
    Settle(s, static_cast<int>(index), now);
    for (int slot = 0; slot < kMaxProcesses; ++slot) {
      if (s->processes[slot].pid == 0) continue;
      uint64_t busy = BusyInWindow(s, static_cast<int>(index), slot, now - window, now);
      if (busy == 0) continue;
      nvmlProcessUtilizationSample_t sample{};
      sample.pid = static_cast<unsigned>(s->processes[slot].pid);
      sample.timeStamp = now_us;
      sample.smUtil =
          static_cast<unsigned>(std::min<uint64_t>(100, (busy * 100 + window / 2) / window));
      samples.push_back(sample);
    }
  }
  if (samples.empty()) {
    *processSamplesCount = 0;
    return NVML_ERROR_NOT_FOUND;
  }
  unsigned capacity = *processSamplesCount;
  *processSamplesCount = static_cast<unsigned>(samples.size());
  if (utilization == nullptr || capacity < samples.size()) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(utilization, samples.data(), samples.size() * sizeof(samples[0]));
  return NVML_SUCCESS;
}
