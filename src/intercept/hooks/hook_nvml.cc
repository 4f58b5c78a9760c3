// NVML hooks, so that nvidia-smi and NVML-based tools inside a slice see the slice as the GPU:
// memory info reports the slice's limit and usage, and the compute process list shows the
// slice's processes (pids as the slice sees them) with what each has charged.
//
// NVML numbers devices physically while limits are per CUDA index; an NVML device is mapped to
// its CUDA index by UUID (from the limits file, or as recorded in the region by CUDA processes),
// else through CUDA_VISIBLE_DEVICES, else by equal index.
#include <cstdlib>
#include <cstring>

#include "intercept/hooks/hook_util.h"
#include "shm/region_ops.h"

namespace vgpu::intercept {
namespace {

constexpr unsigned int kNoInstance = 0xFFFFFFFFu;

int IndexFromVisibleDevices(unsigned int nvml_index, const char* uuid) {
  const char* list = std::getenv("CUDA_VISIBLE_DEVICES");
  if (list == nullptr || list[0] == '\0') return static_cast<int>(nvml_index);
  int position = 0;
  const char* p = list;
  while (*p != '\0') {
    const char* end = std::strchr(p, ',');
    size_t len = end != nullptr ? static_cast<size_t>(end - p) : std::strlen(p);
    while (len > 0 && *p == ' ') {
      ++p;
      --len;
    }
    if (len > 0 && p[0] >= '0' && p[0] <= '9') {
      unsigned long v = std::strtoul(p, nullptr, 10);
      if (v == nvml_index) return position;
    } else if (len > 0 && uuid[0] != '\0' && std::strncmp(p, uuid, len) == 0) {
      return position;
    }
    ++position;
    if (end == nullptr) break;
    p = end + 1;
  }
  return -1;
}

// CUDA index of an NVML device, or -1 when it is not part of what the process can use.
int CudaIndexOf(nvmlDevice_t device) {
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  if (g_nvml.nvmlDeviceGetUUID != nullptr &&
      g_nvml.nvmlDeviceGetUUID(device, uuid, sizeof(uuid)) != NVML_SUCCESS) {
    uuid[0] = '\0';
  }
  Runtime& rt = GetRuntime();
  if (uuid[0] != '\0') {
    for (int d = 0; d < kMaxDevices; ++d) {
      if (rt.config.uuid[d][0] != '\0' && std::strcmp(rt.config.uuid[d], uuid) == 0) return d;
    }
    shm::Region* region = rt.accountant.region();
    for (int d = 0; region != nullptr && d < kMaxDevices; ++d) {
      if (std::strncmp(region->header.uuid[d], uuid, shm::kUuidLength) == 0) return d;
    }
  }
  unsigned int index = 0;
  if (g_nvml.nvmlDeviceGetIndex == nullptr ||
      g_nvml.nvmlDeviceGetIndex(device, &index) != NVML_SUCCESS) {
    return -1;
  }
  return IndexFromVisibleDevices(index, uuid);
}

// Fills the slice's memory numbers; false when the device is not limited (pass through).
bool SliceMemory(nvmlDevice_t device, unsigned long long* total, unsigned long long* used,
                 unsigned long long* free) {
  int d = CudaIndexOf(device);
  Accountant& acct = GetRuntime().accountant;
  if (d < 0 || !acct.Sliced(d)) return false;
  uint64_t limit = acct.Limit(d);
  uint64_t slice_used = acct.SliceUsed(d);
  uint64_t t = limit < *total ? limit : *total;
  *total = t;
  *used = slice_used < t ? slice_used : t;
  *free = t - *used;
  return true;
}

template <typename Info>
void FillInfo(Info* info, int32_t pid, uint64_t used);

template <>
void FillInfo(nvmlProcessInfo_v1_t* info, int32_t pid, uint64_t used) {
  info->pid = static_cast<unsigned int>(pid);
  info->usedGpuMemory = used;
}

template <>
void FillInfo(nvmlProcessInfo_v2_t* info, int32_t pid, uint64_t used) {
  info->pid = static_cast<unsigned int>(pid);
  info->usedGpuMemory = used;
  info->gpuInstanceId = kNoInstance;
  info->computeInstanceId = kNoInstance;
}

template <typename Info>
nvmlReturn_t ListProcesses(nvmlDevice_t device, unsigned int* count, Info* infos,
                           nvmlReturn_t (*real)(nvmlDevice_t, unsigned int*, Info*)) {
  if (count == nullptr) return real(device, count, infos);
  int d = CudaIndexOf(device);
  Accountant& acct = GetRuntime().accountant;
  shm::Region* region = acct.region();
  if (d < 0 || !acct.Sliced(d) || region == nullptr) return real(device, count, infos);
  acct.SliceUsed(d);  // sweeps dead processes when due
  unsigned int n = 0;
  for (const shm::ProcSlot& slot : region->slots) {
    if (shm::LoadPid(slot) != 0 && shm::LoadU64(slot.used[d]) != 0) ++n;
  }
  if (*count < n || (n > 0 && infos == nullptr)) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  unsigned int filled = 0;
  for (const shm::ProcSlot& slot : region->slots) {
    int32_t pid = shm::LoadPid(slot);
    uint64_t used = shm::LoadU64(slot.used[d]);
    if (pid == 0 || used == 0 || filled >= *count) continue;
    FillInfo(&infos[filled++], pid, used);
  }
  *count = filled;
  return NVML_SUCCESS;
}

}  // namespace

extern "C" nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                                nvmlMemory_t* memory) noexcept {
  if (!EnsureNvml()) return NVML_ERROR_UNINITIALIZED;
  auto real = g_nvml.nvmlDeviceGetMemoryInfo;
  if (real == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  nvmlReturn_t r = real(device, memory);
  if (r != NVML_SUCCESS || memory == nullptr) return r;
  SliceMemory(device, &memory->total, &memory->used, &memory->free);
  return r;
}

extern "C" nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                   nvmlMemory_v2_t* memory) noexcept {
  if (!EnsureNvml()) return NVML_ERROR_UNINITIALIZED;
  auto real = g_nvml.nvmlDeviceGetMemoryInfo_v2;
  if (real == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  nvmlReturn_t r = real(device, memory);
  if (r != NVML_SUCCESS || memory == nullptr) return r;
  if (SliceMemory(device, &memory->total, &memory->used, &memory->free)) memory->reserved = 0;
  return r;
}

extern "C" nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                             unsigned int* count,
                                                             nvmlProcessInfo_v1_t* infos) noexcept {
  if (!EnsureNvml()) return NVML_ERROR_UNINITIALIZED;
  auto real = g_nvml.nvmlDeviceGetComputeRunningProcesses;
  if (real == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  return ListProcesses(device, count, infos, real);
}

extern "C" nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(
    nvmlDevice_t device, unsigned int* count, nvmlProcessInfo_v2_t* infos) noexcept {
  if (!EnsureNvml()) return NVML_ERROR_UNINITIALIZED;
  auto real = g_nvml.nvmlDeviceGetComputeRunningProcesses_v2;
  if (real == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  return ListProcesses(device, count, infos, real);
}

extern "C" nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                unsigned int* count,
                                                                nvmlProcessInfo_t* infos) noexcept {
  if (!EnsureNvml()) return NVML_ERROR_UNINITIALIZED;
  auto real = g_nvml.nvmlDeviceGetComputeRunningProcesses_v3;
  if (real == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  return ListProcesses(device, count, infos, real);
}

}  // namespace vgpu::intercept
