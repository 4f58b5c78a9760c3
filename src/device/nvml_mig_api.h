// The NVML MIG and compute-mode entry points NvmlBackend uses (internal to src/device). Each is
// null when the loaded library lacks it; the MIG methods then answer kFailedPrecondition.
#pragma once

#include <dlfcn.h>

#include "common/nvml_api.h"
#include "device/nvml_backend.h"

namespace vgpu::device {

struct NvmlBackend::MigApi {
  nvmlDeviceGetMigMode_fn GetMigMode = nullptr;
  nvmlDeviceSetMigMode_fn SetMigMode = nullptr;
  nvmlDeviceGetGpuInstanceProfileInfoV_fn GetProfileInfoV = nullptr;
  nvmlDeviceGetGpuInstancePossiblePlacements_v2_fn GetPlacements = nullptr;
  nvmlDeviceCreateGpuInstanceWithPlacement_fn CreateGpuInstance = nullptr;
  nvmlDeviceGetGpuInstances_fn GetGpuInstances = nullptr;
  nvmlDeviceGetGpuInstanceById_fn GetGpuInstanceById = nullptr;
  nvmlGpuInstanceGetInfo_fn GpuInstanceGetInfo = nullptr;
  nvmlGpuInstanceDestroy_fn GpuInstanceDestroy = nullptr;
  nvmlGpuInstanceGetComputeInstanceProfileInfo_fn GetCiProfileInfo = nullptr;
  nvmlGpuInstanceCreateComputeInstance_fn CreateComputeInstance = nullptr;
  nvmlGpuInstanceGetComputeInstances_fn GetComputeInstances = nullptr;
  nvmlComputeInstanceGetInfo_v2_fn ComputeInstanceGetInfo = nullptr;
  nvmlComputeInstanceDestroy_fn ComputeInstanceDestroy = nullptr;
  nvmlDeviceGetUUID_fn GetUUID = nullptr;
  nvmlDeviceGetMemoryInfo_fn GetMemoryInfo = nullptr;
  nvmlDeviceSetComputeMode_fn SetComputeMode = nullptr;

  void Load(void* lib) {
    auto get = [lib](auto* slot, const char* name) {
      *slot = reinterpret_cast<std::remove_pointer_t<decltype(slot)>>(dlsym(lib, name));
    };
    get(&GetMigMode, "nvmlDeviceGetMigMode");
    get(&SetMigMode, "nvmlDeviceSetMigMode");
    get(&GetProfileInfoV, "nvmlDeviceGetGpuInstanceProfileInfoV");
    get(&GetPlacements, "nvmlDeviceGetGpuInstancePossiblePlacements_v2");
    get(&CreateGpuInstance, "nvmlDeviceCreateGpuInstanceWithPlacement");
    get(&GetGpuInstances, "nvmlDeviceGetGpuInstances");
    get(&GetGpuInstanceById, "nvmlDeviceGetGpuInstanceById");
    get(&GpuInstanceGetInfo, "nvmlGpuInstanceGetInfo");
    get(&GpuInstanceDestroy, "nvmlGpuInstanceDestroy");
    get(&GetCiProfileInfo, "nvmlGpuInstanceGetComputeInstanceProfileInfo");
    get(&CreateComputeInstance, "nvmlGpuInstanceCreateComputeInstance");
    get(&GetComputeInstances, "nvmlGpuInstanceGetComputeInstances");
    get(&ComputeInstanceGetInfo, "nvmlComputeInstanceGetInfo_v2");
    get(&ComputeInstanceDestroy, "nvmlComputeInstanceDestroy");
    get(&GetUUID, "nvmlDeviceGetUUID");
    get(&GetMemoryInfo, "nvmlDeviceGetMemoryInfo");
    get(&SetComputeMode, "nvmlDeviceSetComputeMode");
  }
  bool Complete() const {
    return GetMigMode && SetMigMode && GetProfileInfoV && GetPlacements && CreateGpuInstance &&
           GetGpuInstances && GetGpuInstanceById && GpuInstanceGetInfo && GpuInstanceDestroy &&
           GetCiProfileInfo && CreateComputeInstance && GetComputeInstances &&
           ComputeInstanceGetInfo && ComputeInstanceDestroy && GetUUID;
  }
};

}  // namespace vgpu::device
