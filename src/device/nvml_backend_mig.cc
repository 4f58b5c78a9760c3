// NvmlBackend's MIG methods: profiles and placements as NVML reports them, GPU instances with one
// compute instance each, created at an explicit placement and found again by UUID.
#include <algorithm>
#include <cstring>

#include "device/nvml_mig_api.h"

namespace vgpu::device {
namespace {

constexpr unsigned kProfileNamePrefix = 4;  // "MIG "

// The compute instance profile index whose slice count equals the GPU instance's.
unsigned FullCiProfile(unsigned gi_slices) {
  switch (gi_slices) {
    case 1:
      return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2:
      return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3:
      return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4:
      return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    case 6:
      return NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE;
    case 8:
      return NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE;
    default:
      return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
  }
}

}  // namespace

Result<void*> NvmlBackend::MigHandle(int index) const {
  if (!mig_->Complete()) return Status::FailedPrecondition("this NVML has no MIG entry points");
  void* handle = Handle(index);
  if (handle == nullptr) return Status::NotFound("no GPU " + std::to_string(index));
  return handle;
}

namespace {

Status FromNvml(nvmlReturn_t r, const std::string& what, const std::string& error) {
  std::string m = what + ": " + error;
  switch (r) {
    case NVML_SUCCESS:
      return Status::Ok();
    case NVML_ERROR_IN_USE:
    case NVML_ERROR_RESET_REQUIRED:
    case NVML_ERROR_NOT_SUPPORTED:
      return Status::FailedPrecondition(m);
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return Status::ResourceExhausted(m);
    case NVML_ERROR_NOT_FOUND:
      return Status::NotFound(m);
    case NVML_ERROR_NO_PERMISSION:
      return Status::PermissionDenied(m);
    case NVML_ERROR_INVALID_ARGUMENT:
      return Status::InvalidArgument(m);
    default:
      return Status::Unavailable(m);
  }
}

}  // namespace

Result<MigModeState> NvmlBackend::GetMigMode(int index) {
  Result<void*> handle = MigHandle(index);
  if (!handle) return handle.error();
  auto dev = static_cast<nvmlDevice_t>(*handle);
  unsigned current = 0, pending = 0;
  nvmlReturn_t r = mig_->GetMigMode(dev, &current, &pending);
  if (r != NVML_SUCCESS) return FromNvml(r, "nvmlDeviceGetMigMode", NvmlError(r));
  return MigModeState{current == NVML_DEVICE_MIG_ENABLE, pending == NVML_DEVICE_MIG_ENABLE};
}

Status NvmlBackend::SetMigMode(int index, bool enabled) {
  Result<void*> handle = MigHandle(index);
  if (!handle) return handle.error();
  auto dev = static_cast<nvmlDevice_t>(*handle);
  nvmlReturn_t activation = NVML_SUCCESS;
  nvmlReturn_t r = mig_->SetMigMode(dev, enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE,
                                    &activation);
  if (r != NVML_SUCCESS) return FromNvml(r, "nvmlDeviceSetMigMode", NvmlError(r));
  if (activation != NVML_SUCCESS) {
    return FromNvml(
        activation == NVML_ERROR_RESET_REQUIRED ? NVML_ERROR_RESET_REQUIRED : activation,
        "MIG mode set, pending until the GPU is reset", NvmlError(activation));
  }
  return Status::Ok();
}

Result<std::vector<MigProfileInfo>> NvmlBackend::MigProfiles(int index) {
  Result<void*> handle = MigHandle(index);
  if (!handle) return handle.error();
  auto dev = static_cast<nvmlDevice_t>(*handle);
  std::vector<MigProfileInfo> out;
  for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = nvmlGpuInstanceProfileInfo_v2;
    nvmlReturn_t r = mig_->GetProfileInfoV(dev, p, &info);
    if (r == NVML_ERROR_INVALID_ARGUMENT) break;
    if (r == NVML_ERROR_NOT_SUPPORTED) continue;
    if (r != NVML_SUCCESS) return FromNvml(r, "nvmlDeviceGetGpuInstanceProfileInfoV", NvmlError(r));
    MigProfileInfo m;
    m.profile_id = static_cast<int>(info.id);
    m.name = info.name;
    if (m.name.rfind("MIG ", 0) == 0) m.name = m.name.substr(kProfileNamePrefix);
    m.compute_slices = static_cast<int>(info.sliceCount);
    m.sm_count = static_cast<int>(info.multiprocessorCount);
    m.memory_bytes = info.memorySizeMB << 20;
    m.max_count = static_cast<int>(info.instanceCount);
    m.copy_engines = static_cast<int>(info.copyEngineCount);
    m.decoders = static_cast<int>(info.decoderCount);
    m.encoders = static_cast<int>(info.encoderCount);
    m.jpegs = static_cast<int>(info.jpegCount);
    m.ofas = static_cast<int>(info.ofaCount);
    nvmlGpuInstancePlacement_t placements[8];
    unsigned count = 8;
    r = mig_->GetPlacements(dev, info.id, placements, &count);
    if (r != NVML_SUCCESS) {
      return FromNvml(r, "nvmlDeviceGetGpuInstancePossiblePlacements_v2", NvmlError(r));
    }
    for (unsigned i = 0; i < count; ++i) {
      m.starts.push_back(static_cast<int>(placements[i].start));
      m.memory_slices = static_cast<int>(placements[i].size);
    }
    out.push_back(std::move(m));
  }
  return out;
}

Result<std::vector<MigInstance>> NvmlBackend::MigInstances(int index) {
  Result<std::vector<MigProfileInfo>> profiles = MigProfiles(index);
  if (!profiles) return profiles.error();
  auto dev = static_cast<nvmlDevice_t>(Handle(index));
  std::vector<MigInstance> out;
  for (const MigProfileInfo& p : *profiles) {
    nvmlGpuInstance_t gis[8];
    unsigned count = 8;
    nvmlReturn_t r = mig_->GetGpuInstances(dev, static_cast<unsigned>(p.profile_id), gis, &count);
    if (r != NVML_SUCCESS) return FromNvml(r, "nvmlDeviceGetGpuInstances", NvmlError(r));
    for (unsigned g = 0; g < count; ++g) {
      nvmlGpuInstanceInfo_t gi{};
      r = mig_->GpuInstanceGetInfo(gis[g], &gi);
      if (r != NVML_SUCCESS) return FromNvml(r, "nvmlGpuInstanceGetInfo", NvmlError(r));
      MigInstance m;
      m.gpu_index = index;
      m.gi_id = static_cast<int>(gi.id);
      m.profile_id = p.profile_id;
      m.profile = p.name;
      m.start = static_cast<int>(gi.placement.start);
      m.size = static_cast<int>(gi.placement.size);
      m.memory_bytes = p.memory_bytes;
      m.sm_count = p.sm_count;
      nvmlComputeInstanceProfileInfo_t cip{};
      if (mig_->GetCiProfileInfo(gis[g], FullCiProfile(static_cast<unsigned>(p.compute_slices)),
                                 NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
                                 &cip) == NVML_SUCCESS) {
        nvmlComputeInstance_t cis[8];
        unsigned n = 8;
        if (mig_->GetComputeInstances(gis[g], cip.id, cis, &n) == NVML_SUCCESS && n > 0) {
          nvmlComputeInstanceInfo_t ci{};
          if (mig_->ComputeInstanceGetInfo(cis[0], &ci) == NVML_SUCCESS) {
            char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
            if (mig_->GetUUID(ci.device, uuid, sizeof(uuid)) == NVML_SUCCESS) m.uuid = uuid;
            m.ci_id = static_cast<int>(ci.id);
          }
        }
      }
      out.push_back(std::move(m));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const MigInstance& a, const MigInstance& b) { return a.start < b.start; });
  return out;
}

Result<MigInstance> NvmlBackend::CreateMigInstance(int index, int profile_id, int start) {
  Result<std::vector<MigProfileInfo>> profiles = MigProfiles(index);
  if (!profiles) return profiles.error();
  auto dev = static_cast<nvmlDevice_t>(Handle(index));
  auto p = std::find_if(profiles->begin(), profiles->end(),
                        [&](const MigProfileInfo& i) { return i.profile_id == profile_id; });
  if (p == profiles->end()) {
    return Status::InvalidArgument("GPU " + std::to_string(index) + " has no MIG profile id " +
                                   std::to_string(profile_id));
  }
  nvmlGpuInstancePlacement_t placement{static_cast<unsigned>(start),
                                       static_cast<unsigned>(p->memory_slices)};
  nvmlGpuInstance_t gi = nullptr;
  nvmlReturn_t r = mig_->CreateGpuInstance(dev, static_cast<unsigned>(profile_id), &placement, &gi);
  if (r != NVML_SUCCESS) {
    return FromNvml(
        r,
        "nvmlDeviceCreateGpuInstanceWithPlacement(" + p->name + "@" + std::to_string(start) + ")",
        NvmlError(r));
  }
  nvmlComputeInstanceProfileInfo_t cip{};
  r = mig_->GetCiProfileInfo(gi, FullCiProfile(static_cast<unsigned>(p->compute_slices)),
                             NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cip);
  nvmlComputeInstance_t ci = nullptr;
  if (r == NVML_SUCCESS) r = mig_->CreateComputeInstance(gi, cip.id, &ci);
  if (r != NVML_SUCCESS) {
    mig_->GpuInstanceDestroy(gi);  // leave nothing half made behind when we can
    return FromNvml(r, "nvmlGpuInstanceCreateComputeInstance", NvmlError(r));
  }
  nvmlGpuInstanceInfo_t gi_info{};
  nvmlComputeInstanceInfo_t ci_info{};
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  if ((r = mig_->GpuInstanceGetInfo(gi, &gi_info)) != NVML_SUCCESS ||
      (r = mig_->ComputeInstanceGetInfo(ci, &ci_info)) != NVML_SUCCESS ||
      (r = mig_->GetUUID(ci_info.device, uuid, sizeof(uuid))) != NVML_SUCCESS) {
    return FromNvml(r, "reading the new MIG instance", NvmlError(r));
  }
  MigInstance m;
  m.gpu_index = index;
  m.uuid = uuid;
  m.gi_id = static_cast<int>(gi_info.id);
  m.ci_id = static_cast<int>(ci_info.id);
  m.profile_id = profile_id;
  m.profile = p->name;
  m.start = start;
  m.size = p->memory_slices;
  m.memory_bytes = p->memory_bytes;
  m.sm_count = p->sm_count;
  return m;
}

Status NvmlBackend::DestroyMigInstance(int index, int gi_id) {
  Result<void*> handle = MigHandle(index);
  if (!handle) return handle.error();
  auto dev = static_cast<nvmlDevice_t>(*handle);
  nvmlGpuInstance_t gi = nullptr;
  nvmlReturn_t r = mig_->GetGpuInstanceById(dev, static_cast<unsigned>(gi_id), &gi);
  if (r != NVML_SUCCESS) {
    return FromNvml(r, "nvmlDeviceGetGpuInstanceById(" + std::to_string(gi_id) + ")", NvmlError(r));
  }
  for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlComputeInstanceProfileInfo_t cip{};
    if (mig_->GetCiProfileInfo(gi, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &cip) !=
        NVML_SUCCESS) {
      continue;
    }
    nvmlComputeInstance_t cis[8];
    unsigned n = 8;
    if (mig_->GetComputeInstances(gi, cip.id, cis, &n) != NVML_SUCCESS) continue;
    for (unsigned i = 0; i < n; ++i) {
      r = mig_->ComputeInstanceDestroy(cis[i]);
      if (r != NVML_SUCCESS) return FromNvml(r, "nvmlComputeInstanceDestroy", NvmlError(r));
    }
  }
  r = mig_->GpuInstanceDestroy(gi);
  return FromNvml(r, "nvmlGpuInstanceDestroy", NvmlError(r));
}

Status NvmlBackend::SetComputeMode(int index, ComputeMode mode) {
  auto dev = static_cast<nvmlDevice_t>(Handle(index));
  if (dev == nullptr) return Status::NotFound("no GPU " + std::to_string(index));
  if (mig_->SetComputeMode == nullptr) {
    return Status::FailedPrecondition("this NVML has no nvmlDeviceSetComputeMode");
  }
  nvmlComputeMode_t m = mode == ComputeMode::kExclusiveProcess ? NVML_COMPUTEMODE_EXCLUSIVE_PROCESS
                        : mode == ComputeMode::kProhibited     ? NVML_COMPUTEMODE_PROHIBITED
                                                               : NVML_COMPUTEMODE_DEFAULT;
  nvmlReturn_t r = mig_->SetComputeMode(dev, m);
  return FromNvml(r, "nvmlDeviceSetComputeMode", NvmlError(r));
}

}  // namespace vgpu::device
