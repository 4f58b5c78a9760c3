#include "device/nvml_backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "common/log.h"
#include "common/nvml_api.h"
#include "common/nvml_sensor_api.h"
#include "device/cuda_probe.h"
#include "device/nvml_mig_api.h"

namespace vgpu::device {
namespace {

// NVML ABI pieces that common/nvml_api.h does not declare (from the public API reference).
typedef struct nvmlEventSet_st* nvmlEventSet_t;
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t ABI");
constexpr unsigned long long kEventSingleBitEcc = 0x1;
constexpr unsigned long long kEventDoubleBitEcc = 0x2;
constexpr unsigned long long kEventXidCritical = 0x8;
constexpr unsigned long long kEventGpuRecoveryAction = 0x8000;

constexpr unsigned int kPcieTxBytes = 0;  // nvmlPcieUtilCounter_t
constexpr unsigned int kPcieRxBytes = 1;
constexpr unsigned int kNvLinkMaxLinks = 18;
constexpr unsigned int kNvLinkErrReplay = 0;  // nvmlNvLinkErrorCounter_t
constexpr unsigned int kNvLinkErrRecovery = 1;
constexpr unsigned int kNvLinkErrCrcFlit = 2;
constexpr unsigned int kNvLinkErrCrcData = 3;
constexpr int kMemoryErrorCorrected = 0;  // nvmlMemoryErrorType_t
constexpr int kMemoryErrorUncorrected = 1;
constexpr int kAggregateEcc = 1;  // nvmlEccCounterType_t: over the GPU's life

}  // namespace

// The entry points. Each is null when the library does not export it.
struct NvmlBackend::Api {
  void* lib = nullptr;
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*SystemGetDriverVersion)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*SystemGetNVMLVersion)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*DeviceGetCount)(unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*DeviceGetPciInfo)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfo_v2)(nvmlDevice_t, nvmlMemory_v2_t*) = nullptr;
  nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*DeviceGetComputeRunningProcesses_v3)(nvmlDevice_t, unsigned int*,
                                                      nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*DeviceGetComputeRunningProcesses_v2)(nvmlDevice_t, unsigned int*,
                                                      nvmlProcessInfo_t*) = nullptr;
  nvmlReturn_t (*DeviceGetComputeRunningProcesses)(nvmlDevice_t, unsigned int*,
                                                   nvmlProcessInfo_v1_t*) = nullptr;
  nvmlReturn_t (*DeviceGetProcessUtilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*,
                                              unsigned int*, unsigned long long) = nullptr;
  nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, nvmlTemperatureSensors_t,
                                       unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetEnforcedPowerLimit)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetPcieThroughput)(nvmlDevice_t, unsigned int, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetPcieReplayCounter)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetNvLinkState)(nvmlDevice_t, unsigned int, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*DeviceGetNvLinkRemotePciInfo)(nvmlDevice_t, unsigned int,
                                               nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*DeviceGetNvLinkErrorCounter)(nvmlDevice_t, unsigned int, unsigned int,
                                              unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetFieldValues)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
  nvmlReturn_t (*DeviceGetNumaNodeId)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetMinorNumber)(nvmlDevice_t, unsigned int*) = nullptr;
  // (device, nvmlMemoryErrorType_t, nvmlEccCounterType_t, count): enums passed as int.
  nvmlReturn_t (*DeviceGetTotalEccErrors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*EventSetFree)(nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*EventSetWait)(nvmlEventSet_t, nvmlEventData_t*, unsigned int) = nullptr;
  nvmlReturn_t (*DeviceGetSupportedEventTypes)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceRegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  std::vector<std::string> missing;

  template <typename F>
  void Load(F* slot, const char* name, const char* fallback = nullptr) {
    void* p = dlsym(lib, name);
    if (p == nullptr && fallback != nullptr) p = dlsym(lib, fallback);
    if (p == nullptr) missing.emplace_back(name);
    *slot = reinterpret_cast<F>(p);
  }

  std::string Error(nvmlReturn_t r) const {
    const char* s = ErrorString != nullptr ? ErrorString(r) : nullptr;
    return s != nullptr ? std::string(s) : "NVML error " + std::to_string(static_cast<int>(r));
  }
};

std::string NormalizePciBusId(const std::string& bus_id) {
  // domain:bus:device.function; NVML pads the domain to 8 digits, CUDA and sysfs to 4.
  size_t first = bus_id.find(':');
  if (first == std::string::npos || bus_id.size() - first != 8) return bus_id;
  std::string domain = bus_id.substr(0, first);
  while (domain.size() > 4 && domain[0] == '0') domain.erase(0, 1);
  while (domain.size() < 4) domain.insert(0, "0");
  std::string out = domain + bus_id.substr(first);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Result<std::unique_ptr<NvmlBackend>> NvmlBackend::Open(const NvmlBackendOptions& options) {
  auto api = std::make_unique<Api>();
  api->lib = dlopen(options.library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api->lib == nullptr) {
    const char* why = dlerror();
    return Status::Unavailable("cannot load " + options.library_path + ": " +
                               (why != nullptr ? why : "unknown error"));
  }
  Api& a = *api;
  a.Load(&a.Init, "nvmlInit_v2", "nvmlInit");
  a.Load(&a.Shutdown, "nvmlShutdown");
  a.Load(&a.ErrorString, "nvmlErrorString");
  a.Load(&a.SystemGetDriverVersion, "nvmlSystemGetDriverVersion");
  a.Load(&a.SystemGetNVMLVersion, "nvmlSystemGetNVMLVersion");
  a.Load(&a.DeviceGetCount, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  a.Load(&a.DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  a.Load(&a.DeviceGetUUID, "nvmlDeviceGetUUID");
  a.Load(&a.DeviceGetName, "nvmlDeviceGetName");
  a.Load(&a.DeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
  a.Load(&a.DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo");
  a.Load(&a.DeviceGetMemoryInfo_v2, "nvmlDeviceGetMemoryInfo_v2");
  a.Load(&a.DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates");
  a.Load(&a.DeviceGetComputeRunningProcesses_v3, "nvmlDeviceGetComputeRunningProcesses_v3");
  a.Load(&a.DeviceGetComputeRunningProcesses_v2, "nvmlDeviceGetComputeRunningProcesses_v2");
  a.Load(&a.DeviceGetComputeRunningProcesses, "nvmlDeviceGetComputeRunningProcesses");
  a.Load(&a.DeviceGetProcessUtilization, "nvmlDeviceGetProcessUtilization");
  a.Load(&a.DeviceGetTemperature, "nvmlDeviceGetTemperature");
  a.Load(&a.DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage");
  a.Load(&a.DeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit");
  a.Load(&a.DeviceGetPcieThroughput, "nvmlDeviceGetPcieThroughput");
  a.Load(&a.DeviceGetPcieReplayCounter, "nvmlDeviceGetPcieReplayCounter");
  a.Load(&a.DeviceGetNvLinkState, "nvmlDeviceGetNvLinkState");
  a.Load(&a.DeviceGetNvLinkRemotePciInfo, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  a.Load(&a.DeviceGetNvLinkErrorCounter, "nvmlDeviceGetNvLinkErrorCounter");
  a.Load(&a.DeviceGetFieldValues, "nvmlDeviceGetFieldValues");
  a.Load(&a.DeviceGetNumaNodeId, "nvmlDeviceGetNumaNodeId");
  a.Load(&a.DeviceGetMinorNumber, "nvmlDeviceGetMinorNumber");
  a.Load(&a.DeviceGetTotalEccErrors, "nvmlDeviceGetTotalEccErrors");
  a.Load(&a.EventSetCreate, "nvmlEventSetCreate");
  a.Load(&a.EventSetFree, "nvmlEventSetFree");
  a.Load(&a.EventSetWait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
  a.Load(&a.DeviceGetSupportedEventTypes, "nvmlDeviceGetSupportedEventTypes");
  a.Load(&a.DeviceRegisterEvents, "nvmlDeviceRegisterEvents");

  if (a.Init == nullptr || a.DeviceGetCount == nullptr || a.DeviceGetHandleByIndex == nullptr ||
      a.DeviceGetUUID == nullptr) {
    return Status::Unavailable(options.library_path +
                               " lacks nvmlInit, nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex "
                               "or nvmlDeviceGetUUID: not an NVML library");
  }
  nvmlReturn_t r = a.Init();
  if (r != NVML_SUCCESS) {
    return Status::Unavailable("nvmlInit failed: " + a.Error(r));
  }
  auto backend = std::unique_ptr<NvmlBackend>(new NvmlBackend(options, std::move(api)));
  return backend;
}

NvmlBackend::NvmlBackend(NvmlBackendOptions options, std::unique_ptr<Api> api)
    : options_(std::move(options)),
      api_(std::move(api)),
      mig_(std::make_unique<MigApi>()),
      gpm_(std::make_unique<GpmSampler>(api_->lib)),
      sensors_(std::make_unique<NvmlSensors>(api_->lib)) {
  mig_->Load(api_->lib);
  char driver[96] = {};
  char nvml[96] = {};
  std::string v = "NVML";
  if (api_->SystemGetNVMLVersion != nullptr &&
      api_->SystemGetNVMLVersion(nvml, sizeof nvml) == NVML_SUCCESS) {
    v += std::string(" ") + nvml;
  }
  if (api_->SystemGetDriverVersion != nullptr &&
      api_->SystemGetDriverVersion(driver, sizeof driver) == NVML_SUCCESS) {
    v += std::string(" (driver ") + driver + ")";
  }
  version_ = v;
}

void* NvmlBackend::Handle(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int>(handles_.size())) return nullptr;
  return handles_[index];
}

std::string NvmlBackend::NvmlError(int code) const {
  return api_->Error(static_cast<nvmlReturn_t>(code));
}

NvmlBackend::~NvmlBackend() {
  if (event_set_ != nullptr && api_->EventSetFree != nullptr) {
    api_->EventSetFree(static_cast<nvmlEventSet_t>(event_set_));
  }
  if (api_->Shutdown != nullptr) api_->Shutdown();
  // The library stays loaded: NVML may keep threads of its own until process exit.
}

std::string NvmlBackend::Describe() const { return version_; }

void* NvmlBackend::LibraryHandle() const { return api_->lib; }

std::vector<std::string> NvmlBackend::MissingFunctions() const {
  std::vector<std::string> missing = api_->missing;
  for (const std::string& name : sensors_->Missing()) missing.push_back(name);
  return missing;
}

namespace {

int NumaFromSysfs(const std::string& sysfs_root, const std::string& bus_id) {
  std::ifstream in(sysfs_root + "/bus/pci/devices/" + bus_id + "/numa_node");
  int node = -1;
  if (in >> node) return node;
  return -1;
}

}  // namespace

Result<std::vector<DeviceInfo>> NvmlBackend::Discover() {
  const Api& a = *api_;
  unsigned int count = 0;
  nvmlReturn_t r = a.DeviceGetCount(&count);
  if (r != NVML_SUCCESS) return Status::Unavailable("nvmlDeviceGetCount: " + a.Error(r));
  std::vector<DeviceInfo> out;
  std::vector<void*> handles;
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    r = a.DeviceGetHandleByIndex(i, &dev);
    if (r != NVML_SUCCESS) {
      return Status::Unavailable("nvmlDeviceGetHandleByIndex(" + std::to_string(i) +
                                 "): " + a.Error(r));
    }
    DeviceInfo d;
    d.index = static_cast<int>(i);
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    r = a.DeviceGetUUID(dev, buf, sizeof buf);
    if (r != NVML_SUCCESS) {
      return Status::Unavailable("nvmlDeviceGetUUID(" + std::to_string(i) + "): " + a.Error(r));
    }
    d.uuid = buf;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (a.DeviceGetName != nullptr && a.DeviceGetName(dev, name, sizeof name) == NVML_SUCCESS) {
      d.name = name;
    } else {
      d.name = "NVIDIA GPU";
    }
    nvmlPciInfo_t pci{};
    if (a.DeviceGetPciInfo != nullptr && a.DeviceGetPciInfo(dev, &pci) == NVML_SUCCESS) {
      d.pci_bus_id = NormalizePciBusId(pci.busId);
      d.pci_device_id = pci.pciDeviceId;
    }
    nvmlMemory_v2_t mem2{};
    mem2.version = nvmlMemory_v2;
    nvmlMemory_t mem{};
    if (a.DeviceGetMemoryInfo_v2 != nullptr &&
        a.DeviceGetMemoryInfo_v2(dev, &mem2) == NVML_SUCCESS) {
      d.memory_total_bytes = mem2.total;
    } else if (a.DeviceGetMemoryInfo != nullptr &&
               a.DeviceGetMemoryInfo(dev, &mem) == NVML_SUCCESS) {
      d.memory_total_bytes = mem.total;
    }
    unsigned int numa = 0;
    if (a.DeviceGetNumaNodeId != nullptr && a.DeviceGetNumaNodeId(dev, &numa) == NVML_SUCCESS) {
      d.numa_node = static_cast<int>(numa);
    } else if (!d.pci_bus_id.empty()) {
      d.numa_node = NumaFromSysfs(options_.sysfs_root, d.pci_bus_id);
    }
    unsigned int minor = 0;
    if (a.DeviceGetMinorNumber != nullptr && a.DeviceGetMinorNumber(dev, &minor) == NVML_SUCCESS) {
      d.minor_number = static_cast<int>(minor);
    }
    handles.push_back(dev);
    out.push_back(std::move(d));
  }
  // NVLink peers: the remote end of each active link, matched to the GPUs found above.
  for (size_t i = 0; i < out.size() && a.DeviceGetNvLinkState != nullptr; ++i) {
    auto dev = static_cast<nvmlDevice_t>(handles[i]);
    std::set<std::string> peers;
    for (unsigned int link = 0; link < kNvLinkMaxLinks; ++link) {
      nvmlEnableState_t active = NVML_FEATURE_DISABLED;
      nvmlReturn_t lr = a.DeviceGetNvLinkState(dev, link, &active);
      if (lr == NVML_ERROR_NOT_SUPPORTED && link == 0) break;
      if (lr != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
      ++out[i].nvlink_active_links;
      nvmlPciInfo_t remote{};
      if (a.DeviceGetNvLinkRemotePciInfo == nullptr ||
          a.DeviceGetNvLinkRemotePciInfo(dev, link, &remote) != NVML_SUCCESS) {
        continue;
      }
      std::string bus = NormalizePciBusId(remote.busId);
      for (const DeviceInfo& other : out) {
        if (other.index != out[i].index && other.pci_bus_id == bus) peers.insert(other.uuid);
      }
    }
    out[i].nvlink_peers.assign(peers.begin(), peers.end());
  }
  // SM counts through the CUDA driver, matched by PCI bus id.
  if (!options_.cuda_library_path.empty()) {
    auto sms = ProbeSmCounts(options_.cuda_library_path);
    if (sms.has_value()) {
      for (DeviceInfo& d : out) {
        auto it = sms->find(d.pci_bus_id);
        if (it != sms->end()) d.sm_count = it->second;
      }
    } else {
      VGPU_LOG_INFO("SM counts unknown: %s", sms.error().message().c_str());
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    handles_ = handles;
    uuids_.clear();
    bus_ids_.clear();
    for (const DeviceInfo& d : out) {
      uuids_.push_back(d.uuid);
      bus_ids_.push_back(d.pci_bus_id);
    }
  }
  SetUpEvents();
  return out;
}

void NvmlBackend::SetUpEvents() {
  std::lock_guard<std::mutex> lock(mu_);
  if (events_set_up_) return;
  events_set_up_ = true;
  const Api& a = *api_;
  if (a.EventSetCreate == nullptr || a.DeviceRegisterEvents == nullptr ||
      a.EventSetWait == nullptr) {
    return;
  }
  nvmlEventSet_t set = nullptr;
  if (a.EventSetCreate(&set) != NVML_SUCCESS) return;
  int registered = 0;
  for (void* h : handles_) {
    auto dev = static_cast<nvmlDevice_t>(h);
    unsigned long long supported =
        kEventXidCritical | kEventDoubleBitEcc | kEventSingleBitEcc | kEventGpuRecoveryAction;
    if (a.DeviceGetSupportedEventTypes != nullptr) {
      unsigned long long s = 0;
      if (a.DeviceGetSupportedEventTypes(dev, &s) == NVML_SUCCESS) supported &= s;
    }
    if (supported == 0) continue;
    if (a.DeviceRegisterEvents(dev, supported, set) == NVML_SUCCESS) ++registered;
  }
  if (registered == 0) {
    if (a.EventSetFree != nullptr) a.EventSetFree(set);
    VGPU_LOG_INFO("NVML health events are not supported here; health comes from sampling only");
    return;
  }
  event_set_ = set;
}

bool NvmlBackend::SupportsEvents() const {
  std::lock_guard<std::mutex> lock(mu_);
  return event_set_ != nullptr;
}

std::vector<HealthEvent> NvmlBackend::WaitForEvents(int timeout_ms) {
  void* set;
  {
    std::lock_guard<std::mutex> lock(mu_);
    set = event_set_;
  }
  std::vector<HealthEvent> out;
  if (set == nullptr) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return out;
  }
  const Api& a = *api_;
  nvmlEventData_t data{};
  nvmlReturn_t r = a.EventSetWait(static_cast<nvmlEventSet_t>(set), &data,
                                  static_cast<unsigned int>(timeout_ms));
  if (r == NVML_ERROR_TIMEOUT) return out;
  if (r != NVML_SUCCESS) {
    // The event set itself failed: NVIDIA's plugin treats this as every GPU failing; we report
    // it as an event without a GPU and let the health rules decide.
    HealthEvent e;
    e.kind = HealthEvent::Kind::kXid;
    e.code = 0;
    e.description = "nvmlEventSetWait failed: " + a.Error(r);
    out.push_back(std::move(e));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 1000)));
    return out;
  }
  HealthEvent e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < handles_.size(); ++i) {
      if (handles_[i] == static_cast<void*>(data.device)) e.uuid = uuids_[i];
    }
  }
  e.gpu_instance_id = data.gpuInstanceId;
  e.compute_instance_id = data.computeInstanceId;
  if (data.eventType & kEventGpuRecoveryAction) {
    e.kind = HealthEvent::Kind::kRecoveryAction;
    e.code = data.eventData;
    e.description = "GPU recovery action " + std::to_string(data.eventData);
  } else if (data.eventType & kEventXidCritical) {
    e.kind = HealthEvent::Kind::kXid;
    e.code = data.eventData;
    e.description = "XID " + std::to_string(data.eventData);
  } else if (data.eventType & kEventDoubleBitEcc) {
    e.kind = HealthEvent::Kind::kDoubleBitEcc;
    e.description = "double-bit ECC error";
  } else {
    e.kind = HealthEvent::Kind::kSingleBitEcc;
    e.description = "single-bit ECC error";
  }
  out.push_back(std::move(e));
  return out;
}

Status NvmlBackend::Probe(int index) {
  Result<DeviceSample> sample = Sample(index);
  if (!sample) return sample.status();
  if (options_.cuda_library_path.empty()) return Status::Ok();
  std::string bus;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index >= 0 && index < static_cast<int>(bus_ids_.size())) bus = bus_ids_[index];
  }
  if (bus.empty()) return Status::Ok();
  Result<MigModeState> mig = GetMigMode(index);
  if (mig && mig->current) return Status::Ok();
  return ProbeGpuWork(options_.cuda_library_path, bus, options_.probe_timeout_ms);
}

Result<DeviceSample> NvmlBackend::Sample(int index) {
  const Api& a = *api_;
  nvmlDevice_t dev = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index >= 0 && index < static_cast<int>(handles_.size())) {
      dev = static_cast<nvmlDevice_t>(handles_[index]);
    }
  }
  if (dev == nullptr) {
    nvmlReturn_t r = a.DeviceGetHandleByIndex(static_cast<unsigned int>(index), &dev);
    if (r != NVML_SUCCESS) return Status::NotFound("no GPU with index " + std::to_string(index));
  }
  DeviceSample s;
  // Memory: the one reading that must work; a GPU that cannot answer it is faulty.
  nvmlMemory_v2_t mem2{};
  mem2.version = nvmlMemory_v2;
  nvmlMemory_t mem{};
  nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (a.DeviceGetMemoryInfo_v2 != nullptr) {
    r = a.DeviceGetMemoryInfo_v2(dev, &mem2);
    if (r == NVML_SUCCESS) s.memory_used_bytes = mem2.used;
  }
  if (r != NVML_SUCCESS && a.DeviceGetMemoryInfo != nullptr) {
    r = a.DeviceGetMemoryInfo(dev, &mem);
    if (r == NVML_SUCCESS) s.memory_used_bytes = mem.used;
  }
  if (r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_UNKNOWN || r == NVML_ERROR_RESET_REQUIRED) {
    return Status::Unavailable("GPU " + std::to_string(index) + ": " + a.Error(r));
  }
  nvmlUtilization_t util{};
  if (a.DeviceGetUtilizationRates != nullptr &&
      a.DeviceGetUtilizationRates(dev, &util) == NVML_SUCCESS) {
    s.sm_utilization = util.gpu / 100.0;
    s.memory_bandwidth_utilization = util.memory / 100.0;
  }
  unsigned int value = 0;
  if (a.DeviceGetTemperature != nullptr &&
      a.DeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &value) == NVML_SUCCESS) {
    s.temperature_celsius = value;
  }
  if (a.DeviceGetPowerUsage != nullptr && a.DeviceGetPowerUsage(dev, &value) == NVML_SUCCESS) {
    s.power_watts = value / 1000.0;
  }
  if (a.DeviceGetEnforcedPowerLimit != nullptr &&
      a.DeviceGetEnforcedPowerLimit(dev, &value) == NVML_SUCCESS) {
    s.power_limit_watts = value / 1000.0;
  }
  sensors_->Read(dev, &s);
  if (a.DeviceGetPcieThroughput != nullptr) {
    // KB/s over a 20 ms window.
    if (a.DeviceGetPcieThroughput(dev, kPcieTxBytes, &value) == NVML_SUCCESS) {
      s.pcie_transmit_bytes_per_second = value * 1024.0;
    }
    if (a.DeviceGetPcieThroughput(dev, kPcieRxBytes, &value) == NVML_SUCCESS) {
      s.pcie_receive_bytes_per_second = value * 1024.0;
    }
  }
  if (a.DeviceGetPcieReplayCounter != nullptr &&
      a.DeviceGetPcieReplayCounter(dev, &value) == NVML_SUCCESS) {
    s.pcie_replay_errors_total = value;
  }
  if (a.DeviceGetTotalEccErrors != nullptr) {
    unsigned long long count = 0;
    if (a.DeviceGetTotalEccErrors(dev, kMemoryErrorCorrected, kAggregateEcc, &count) ==
        NVML_SUCCESS) {
      s.ecc_corrected_errors_total = count;
    }
    if (a.DeviceGetTotalEccErrors(dev, kMemoryErrorUncorrected, kAggregateEcc, &count) ==
        NVML_SUCCESS) {
      s.ecc_uncorrected_errors_total = count;
    }
  }
  if (a.DeviceGetNvLinkState != nullptr) {
    for (unsigned int link = 0; link < kNvLinkMaxLinks; ++link) {
      nvmlEnableState_t active = NVML_FEATURE_DISABLED;
      nvmlReturn_t lr = a.DeviceGetNvLinkState(dev, link, &active);
      if (lr == NVML_ERROR_NOT_SUPPORTED && link == 0) break;
      if (lr != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
      NvLinkLinkSample ls;
      ls.link = static_cast<int>(link);
      if (a.DeviceGetNvLinkErrorCounter != nullptr) {
        unsigned long long v = 0, w = 0;
        if (a.DeviceGetNvLinkErrorCounter(dev, link, kNvLinkErrReplay, &v) == NVML_SUCCESS) {
          ls.replay_errors_total = v;
        }
        if (a.DeviceGetNvLinkErrorCounter(dev, link, kNvLinkErrRecovery, &v) == NVML_SUCCESS) {
          ls.recovery_errors_total = v;
        }
        if (a.DeviceGetNvLinkErrorCounter(dev, link, kNvLinkErrCrcFlit, &v) == NVML_SUCCESS) {
          if (a.DeviceGetNvLinkErrorCounter(dev, link, kNvLinkErrCrcData, &w) != NVML_SUCCESS)
            w = 0;
          ls.crc_errors_total = v + w;
        }
      }
      s.nvlink_links.push_back(ls);
    }
    if (!s.nvlink_links.empty() && a.DeviceGetFieldValues != nullptr) {
      nvmlFieldValue_t fields[2] = {};
      fields[0].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
      fields[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
      if (a.DeviceGetFieldValues(dev, 2, fields) == NVML_SUCCESS) {
        if (fields[0].nvmlReturn == NVML_SUCCESS) {
          s.nvlink_transmit_bytes_total = fields[0].value.ullVal * 1024ULL;
        }
        if (fields[1].nvmlReturn == NVML_SUCCESS) {
          s.nvlink_receive_bytes_total = fields[1].value.ullVal * 1024ULL;
        }
      }
    }
  }
  // Processes and their memory.
  std::vector<nvmlProcessInfo_t> procs(64);
  auto query = [&](auto fn) -> nvmlReturn_t {
    for (int attempt = 0; attempt < 4; ++attempt) {
      unsigned int n = static_cast<unsigned int>(procs.size());
      nvmlReturn_t pr = fn(dev, &n, procs.data());
      if (pr == NVML_ERROR_INSUFFICIENT_SIZE) {
        procs.resize(n + 16);
        continue;
      }
      if (pr == NVML_SUCCESS) procs.resize(n);
      return pr;
    }
    return NVML_ERROR_INSUFFICIENT_SIZE;
  };
  nvmlReturn_t pr = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (a.DeviceGetComputeRunningProcesses_v3 != nullptr) {
    pr = query(a.DeviceGetComputeRunningProcesses_v3);
  }
  if (pr != NVML_SUCCESS && a.DeviceGetComputeRunningProcesses_v2 != nullptr) {
    procs.assign(64, {});
    pr = query(a.DeviceGetComputeRunningProcesses_v2);
  }
  if (pr == NVML_SUCCESS) {
    for (const nvmlProcessInfo_t& p : procs) {
      ProcessUsage u;
      u.pid = p.pid;
      u.used_memory_bytes = p.usedGpuMemory == NVML_VALUE_NOT_AVAILABLE ? 0 : p.usedGpuMemory;
      s.processes.push_back(u);
    }
  } else if (a.DeviceGetComputeRunningProcesses != nullptr) {
    std::vector<nvmlProcessInfo_v1_t> v1(64);
    unsigned int n = static_cast<unsigned int>(v1.size());
    if (a.DeviceGetComputeRunningProcesses(dev, &n, v1.data()) == NVML_SUCCESS) {
      for (unsigned int i = 0; i < n; ++i) {
        ProcessUsage u;
        u.pid = v1[i].pid;
        u.used_memory_bytes =
            v1[i].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE ? 0 : v1[i].usedGpuMemory;
        s.processes.push_back(u);
      }
    }
  }
  // Per-process SM share over the last second.
  if (!s.processes.empty() && a.DeviceGetProcessUtilization != nullptr) {
    auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    unsigned long long since = static_cast<unsigned long long>(now_us) - 1'000'000ULL;
    std::vector<nvmlProcessUtilizationSample_t> samples(s.processes.size() + 16);
    unsigned int n = static_cast<unsigned int>(samples.size());
    if (a.DeviceGetProcessUtilization(dev, samples.data(), &n, since) == NVML_SUCCESS) {
      for (unsigned int i = 0; i < n; ++i) {
        for (ProcessUsage& u : s.processes) {
          if (u.pid == samples[i].pid) u.sm_utilization = samples[i].smUtil / 100.0;
        }
      }
    }
  }
  // GPM over the interval since the previous sample, for the GPU and its MIG GPU instances.
  if (gpm_->available()) {
    const uint64_t now =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now().time_since_epoch())
                                  .count());
    s.gpm = gpm_->SampleDevice(index, dev, now);
    auto mode = GetMigMode(index);
    if (mode.has_value() && mode->current) {
      auto instances = MigInstances(index);
      if (instances.has_value()) {
        std::set<int> seen;
        for (const MigInstance& mi : *instances) {
          if (!seen.insert(mi.gi_id).second) continue;
          auto m = gpm_->SampleMig(index, dev, static_cast<unsigned>(mi.gi_id), now);
          if (m.has_value()) s.mig_gpm.push_back({mi.gi_id, *m});
        }
      }
    }
  }
  return s;
}

}  // namespace vgpu::device
