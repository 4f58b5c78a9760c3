// NVML: MIG mode, GPU and compute instance profiles, placements, creation and destruction, MIG
// device handles, and the compute mode. The state machine is simgpu/mig_state.h, on the shared
// state, so instances made by one process (the node daemon) are seen by all (a CUDA process
// started with CUDA_VISIBLE_DEVICES=MIG-<uuid>).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "simgpu/mig_state.h"
#include "simgpu/nvml/nvml_internal.h"

using namespace vgpu;
using namespace vgpu::simgpu;
using namespace vgpu::simgpu::nvml;

namespace {

const mig::ModelTable* Table(unsigned index) { return MigTableFor(Spec(index)); }

// The profile at NVML profile index `index` (NVML_GPU_INSTANCE_PROFILE_*), or null.
const mig::Profile* ProfileByIndex(unsigned device, unsigned index) {
  const mig::ModelTable* t = Table(device);
  if (t == nullptr) return nullptr;
  for (const mig::Profile& p : t->profiles) {
    if (static_cast<unsigned>(p.nvml_index) == index) return &p;
  }
  return nullptr;
}

const mig::Profile* ProfileById(unsigned device, unsigned id) {
  const mig::ModelTable* t = Table(device);
  return t == nullptr ? nullptr : t->FindById(static_cast<int>(id));
}

MigState State() { return MigState(L().state->layout(), &L().config); }

// Handles, made once per (slot, ci, generation). Need L().mu.
nvmlGpuInstance_t GiHandleLocked(unsigned parent, int slot, uint32_t generation) {
  auto& h = L().gpu_instances[{slot, generation}];
  if (!h) h.reset(new nvmlGpuInstance_st{parent, slot, generation});
  return h.get();
}
nvmlComputeInstance_t CiHandleLocked(unsigned parent, int slot, int ci, uint32_t generation) {
  auto& h = L().compute_instances[{slot, ci, generation}];
  if (!h) h.reset(new nvmlComputeInstance_st{parent, slot, ci, generation});
  return h.get();
}
nvmlDevice_t MigDeviceLocked(unsigned parent, int slot, int ci, uint32_t generation) {
  auto& h = L().mig_devices[{slot, ci, generation}];
  if (!h) {
    h.reset(new nvmlDevice_st);
    h->index = parent;
    h->mig = true;
    h->slot = slot;
    h->ci = ci;
    h->generation = generation;
  }
  return h.get();
}

// Validates a GPU instance handle (known to this process and not destroyed since). Needs L().mu.
nvmlReturn_t CheckGi(nvmlGpuInstance_t gi) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (gi == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto it = L().gpu_instances.find({gi->slot, gi->generation});
  if (it == L().gpu_instances.end() || it->second.get() != gi) return NVML_ERROR_INVALID_ARGUMENT;
  const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[gi->slot];
  if (r.used == 0 || r.generation != gi->generation) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

nvmlReturn_t CheckCi(nvmlComputeInstance_t ci) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (ci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto it = L().compute_instances.find({ci->slot, ci->ci, ci->generation});
  if (it == L().compute_instances.end() || it->second.get() != ci) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[ci->slot];
  if (r.used == 0 || r.cis[ci->ci].used == 0 || r.cis[ci->ci].generation != ci->generation) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}

template <typename Info>
void FillProfileInfo(const mig::Profile& p, Info* info) {
  info->id = static_cast<unsigned>(p.profile_id);
  info->sliceCount = static_cast<unsigned>(p.compute_slices);
  info->instanceCount = static_cast<unsigned>(p.max_count);
  info->multiprocessorCount = static_cast<unsigned>(p.sm_count);
  info->copyEngineCount = static_cast<unsigned>(p.engines.copy);
  info->decoderCount = static_cast<unsigned>(p.engines.decoder);
  info->encoderCount = static_cast<unsigned>(p.engines.encoder);
  info->jpegCount = static_cast<unsigned>(p.engines.jpeg);
  info->ofaCount = static_cast<unsigned>(p.engines.ofa);
  info->memorySizeMB = static_cast<unsigned long long>(p.memory_mib);
}

nvmlReturn_t ProfileInfoV(const mig::Profile& p, nvmlGpuInstanceProfileInfo_v2_t* info) {
  std::string name = "MIG " + std::string(p.name);
  if (info->version == nvmlGpuInstanceProfileInfo_v2) {
    std::memset(reinterpret_cast<char*>(info) + sizeof(unsigned), 0,
                sizeof(*info) - sizeof(unsigned));
    FillProfileInfo(p, info);
    info->isP2pSupported = 0;
    std::snprintf(info->name, sizeof(info->name), "%s", name.c_str());
    return NVML_SUCCESS;
  }
  if (info->version == nvmlGpuInstanceProfileInfo_v3) {
    auto* v3 = reinterpret_cast<nvmlGpuInstanceProfileInfo_v3_t*>(info);
    std::memset(reinterpret_cast<char*>(v3) + sizeof(unsigned), 0, sizeof(*v3) - sizeof(unsigned));
    FillProfileInfo(p, v3);
    v3->capabilities = 0;
    std::snprintf(v3->name, sizeof(v3->name), "%s", name.c_str());
    return NVML_SUCCESS;
  }
  return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

}  // namespace

namespace vgpu::simgpu::nvml {

bool MigEnabled(unsigned index) {
  SharedState::Lock lock(L().state.get());
  return L().state->layout()->mig[index].current == NVML_DEVICE_MIG_ENABLE;
}

nvmlReturn_t CheckAnyDevice(nvmlDevice_t device, unsigned* index, int* record, bool* mig) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  Library& l = L();
  if (device >= &l.devices[0] && device < &l.devices[l.config.devices.size()]) {
    *index = device->index;
    *record = static_cast<int>(device->index);
    *mig = false;
    return NVML_SUCCESS;
  }
  std::lock_guard<std::mutex> guard(l.mu);
  if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto it = l.mig_devices.find({device->slot, device->ci, device->generation});
  if (it == l.mig_devices.end() || it->second.get() != device) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(l.state.get());
  const MigGpuInstanceRecord& r = l.state->layout()->mig_instances[device->slot];
  if (r.used == 0 || r.cis[device->ci].used == 0 ||
      r.cis[device->ci].generation != device->generation) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *index = device->index;
  *record = kMaxDevices + device->slot;
  *mig = true;
  return NVML_SUCCESS;
}

std::string MigDeviceUuid(nvmlDevice_t mig_device) {
  SharedState::Lock lock(L().state.get());
  const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[mig_device->slot];
  return MigUuid(Spec(r.parent), r.id, r.cis[mig_device->ci].id);
}

std::string MigDeviceName(nvmlDevice_t mig_device) {
  SharedState::Lock lock(L().state.get());
  const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[mig_device->slot];
  return Spec(r.parent).name + " MIG " + r.profile_name;
}

nvmlReturn_t FindMigDeviceByUuid(const char* uuid, nvmlDevice_t* device) {
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  for (int i = 0; i < kMaxMigInstances; ++i) {
    const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[i];
    if (r.used == 0) continue;
    for (int c = 0; c < kMaxComputeInstances; ++c) {
      if (r.cis[c].used == 0 || MigUuid(Spec(r.parent), r.id, r.cis[c].id) != uuid) continue;
      *device = MigDeviceLocked(r.parent, i, c, r.cis[c].generation);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

}  // namespace vgpu::simgpu::nvml

// --- Mode ---

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                                  unsigned int* pendingMode) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (currentMode == nullptr || pendingMode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (Table(index) == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  SharedState::Lock lock(L().state.get());
  *currentMode = L().state->layout()->mig[index].current;
  *pendingMode = L().state->layout()->mig[index].pending;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                                  nvmlReturn_t* activationStatus) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (activationStatus == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(L().state.get());
  L().state->ReclaimDead();
  return State().SetMode(index, mode, activationStatus);
}

// Simulation only (not an NVML call): a GPU reset, as `nvidia-smi -r` does. Applies a pending
// MIG mode; GPU instances do not survive it. NVML_ERROR_IN_USE while processes use the GPU.
SIMGPU_NVML_API nvmlReturn_t vgpuSimgpuResetDevice(unsigned int index) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (index >= L().config.devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(L().state.get());
  L().state->ReclaimDead();
  return State().Reset(index);
}

// --- Profiles and placements ---

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t* info) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (info == nullptr || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (Table(index) == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  const mig::Profile* p = ProfileByIndex(index, profile);
  if (p == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  std::memset(info, 0, sizeof(*info));
  FillProfileInfo(*p, info);
  return NVML_SUCCESS;
}

// Takes a v2 or v3 struct (by .version); NOT_SUPPORTED unless MIG is enabled, as NVML's.
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(
    nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t* info) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (info == nullptr || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (Table(index) == nullptr || !MigEnabled(index)) return NVML_ERROR_NOT_SUPPORTED;
  const mig::Profile* p = ProfileByIndex(index, profile);
  if (p == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  return ProfileInfoV(*p, info);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoByIdV(
    nvmlDevice_t device, unsigned int profileId, nvmlGpuInstanceProfileInfo_v2_t* info) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (Table(index) == nullptr || !MigEnabled(index)) return NVML_ERROR_NOT_SUPPORTED;
  const mig::Profile* p = ProfileById(index, profileId);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return ProfileInfoV(*p, info);
}

// Every legal placement, whether MIG is enabled or not (as NVML documents).
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t* placements,
    unsigned int* count) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (Table(index) == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  const mig::Profile* p = ProfileById(index, profileId);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<int> starts = p->Starts();
  if (placements == nullptr) {
    *count = static_cast<unsigned>(starts.size());
    return NVML_SUCCESS;
  }
  if (*count < starts.size()) {
    *count = static_cast<unsigned>(starts.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    placements[i].start = static_cast<unsigned>(starts[i]);
    placements[i].size = static_cast<unsigned>(p->memory_slices);
  }
  *count = static_cast<unsigned>(starts.size());
  return NVML_SUCCESS;
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements(
    nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t* placements,
    unsigned int* count) {
  return nvmlDeviceGetGpuInstancePossiblePlacements_v2(device, profileId, placements, count);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device,
                                                                       unsigned int profileId,
                                                                       unsigned int* count) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (Table(index) == nullptr || !MigEnabled(index)) return NVML_ERROR_NOT_SUPPORTED;
  const mig::Profile* p = ProfileById(index, profileId);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(L().state.get());
  *count = State().RemainingCapacity(index, *p);
  return NVML_SUCCESS;
}

// --- GPU instances ---

static nvmlReturn_t CreateGi(nvmlDevice_t device, unsigned profileId, int start,
                             nvmlGpuInstance_t* gpuInstance) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (gpuInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (Table(index) == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  const mig::Profile* p = ProfileById(index, profileId);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  int slot = -1;
  nvmlReturn_t rc = State().CreateGpuInstance(index, *p, start, &slot);
  if (rc != NVML_SUCCESS) return rc;
  *gpuInstance = GiHandleLocked(index, slot, L().state->layout()->mig_instances[slot].generation);
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device,
                                                         unsigned int profileId,
                                                         nvmlGpuInstance_t* gpuInstance) {
  return CreateGi(device, profileId, -1, gpuInstance);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* gpuInstance) {
  if (placement == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  const mig::ModelTable* t = Table(index);
  if (placement->start >= static_cast<unsigned>(t ? t->memory_slices : mig::kMemorySlices)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const mig::Profile* p = ProfileById(index, profileId);
  if (p != nullptr && placement->size != static_cast<unsigned>(p->memory_slices)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return CreateGi(device, profileId, static_cast<int>(placement->start), gpuInstance);
}

// profileId 0xFFFFFFFF... is not a filter in NVML: the profile id selects the instances listed.
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                       nvmlGpuInstance_t* gpuInstances,
                                                       unsigned int* count) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (Table(index) == nullptr || !MigEnabled(index)) return NVML_ERROR_NOT_SUPPORTED;
  if (ProfileById(index, profileId) == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  std::vector<nvmlGpuInstance_t> found;
  for (int i = 0; i < kMaxMigInstances; ++i) {
    const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[i];
    if (r.used == 0 || r.parent != index || r.profile_id != profileId) continue;
    found.push_back(GiHandleLocked(index, i, r.generation));
  }
  if (gpuInstances == nullptr && !found.empty()) {
    *count = static_cast<unsigned>(found.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (*count < found.size()) {
    *count = static_cast<unsigned>(found.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t i = 0; i < found.size(); ++i) gpuInstances[i] = found[i];
  *count = static_cast<unsigned>(found.size());
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                          nvmlGpuInstance_t* gpuInstance) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (gpuInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (Table(index) == nullptr || !MigEnabled(index)) return NVML_ERROR_NOT_SUPPORTED;
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  int slot = State().FindGpuInstance(index, id);
  if (slot < 0) return NVML_ERROR_NOT_FOUND;
  *gpuInstance = GiHandleLocked(index, slot, L().state->layout()->mig_instances[slot].generation);
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                                    nvmlGpuInstanceInfo_t* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  if (nvmlReturn_t rc = CheckGi(gpuInstance); rc != NVML_SUCCESS) return rc;
  const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[gpuInstance->slot];
  info->device = &L().devices[r.parent];
  info->id = r.id;
  info->profileId = r.profile_id;
  info->placement.start = r.start;
  info->placement.size = r.size;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  if (nvmlReturn_t rc = CheckGi(gpuInstance); rc != NVML_SUCCESS) return rc;
  L().state->ReclaimDead();
  return State().DestroyGpuInstance(gpuInstance->slot);
}

// --- Compute instances ---

static nvmlReturn_t CiProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned profile,
                                  unsigned engProfile, nvmlComputeInstanceProfileInfo_t* info) {
  if (info == nullptr || engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  if (nvmlReturn_t rc = CheckGi(gpuInstance); rc != NVML_SUCCESS) return rc;
  if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
  const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[gpuInstance->slot];
  const mig::Profile* gp = ProfileById(r.parent, r.profile_id);
  for (const MigCiProfile& c : MigComputeProfiles(r.sm_slices)) {
    if (c.id != profile) continue;
    std::memset(info, 0, sizeof(*info));
    info->id = c.id;
    info->sliceCount = c.slices;
    info->instanceCount = r.sm_slices / c.slices;
    info->multiprocessorCount =
        c.slices == r.sm_slices ? r.sm_count : r.sm_count * c.slices / r.sm_slices;
    info->sharedCopyEngineCount = static_cast<unsigned>(gp->engines.copy);
    info->sharedDecoderCount = static_cast<unsigned>(gp->engines.decoder);
    info->sharedEncoderCount = static_cast<unsigned>(gp->engines.encoder);
    info->sharedJpegCount = static_cast<unsigned>(gp->engines.jpeg);
    info->sharedOfaCount = static_cast<unsigned>(gp->engines.ofa);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_SUPPORTED;
}

SIMGPU_NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_t* info) {
  return CiProfileInfo(gpuInstance, profile, engProfile, info);
}

SIMGPU_NVML_API nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstance_t* computeInstance) {
  if (computeInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  if (nvmlReturn_t rc = CheckGi(gpuInstance); rc != NVML_SUCCESS) return rc;
  int ci = -1;
  nvmlReturn_t rc = State().CreateComputeInstance(gpuInstance->slot, profileId, &ci);
  if (rc != NVML_SUCCESS) return rc;
  const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[gpuInstance->slot];
  *computeInstance = CiHandleLocked(r.parent, gpuInstance->slot, ci, r.cis[ci].generation);
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t
nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                   nvmlComputeInstance_t* computeInstances, unsigned int* count) {
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  if (nvmlReturn_t rc = CheckGi(gpuInstance); rc != NVML_SUCCESS) return rc;
  const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[gpuInstance->slot];
  std::vector<nvmlComputeInstance_t> found;
  for (int i = 0; i < kMaxComputeInstances; ++i) {
    if (r.cis[i].used == 0 || r.cis[i].profile_id != profileId) continue;
    found.push_back(CiHandleLocked(r.parent, gpuInstance->slot, i, r.cis[i].generation));
  }
  if (computeInstances == nullptr || *count < found.size()) {
    *count = static_cast<unsigned>(found.size());
    return found.empty() ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t i = 0; i < found.size(); ++i) computeInstances[i] = found[i];
  *count = static_cast<unsigned>(found.size());
  return NVML_SUCCESS;
}

static nvmlReturn_t CiInfo(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t* info) {
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  if (nvmlReturn_t rc = CheckCi(computeInstance); rc != NVML_SUCCESS) return rc;
  const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[computeInstance->slot];
  const MigComputeRecord& c = r.cis[computeInstance->ci];
  info->device =
      MigDeviceLocked(r.parent, computeInstance->slot, computeInstance->ci, c.generation);
  info->gpuInstance = GiHandleLocked(r.parent, computeInstance->slot, r.generation);
  info->id = c.id;
  info->profileId = c.profile_id;
  info->placement.start = c.start;
  info->placement.size = c.size;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                                           nvmlComputeInstanceInfo_t* info) {
  return CiInfo(computeInstance, info);
}
SIMGPU_NVML_API nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t computeInstance,
                                                        nvmlComputeInstanceInfo_t* info) {
  return CiInfo(computeInstance, info);
}

SIMGPU_NVML_API nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  if (nvmlReturn_t rc = CheckCi(computeInstance); rc != NVML_SUCCESS) return rc;
  L().state->ReclaimDead();
  return State().DestroyComputeInstance(computeInstance->slot, computeInstance->ci);
}

// --- MIG device handles ---

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                            unsigned int* count) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const mig::ModelTable* t = Table(index);
  *count = t == nullptr ? 0 : static_cast<unsigned>(t->max_instances);
  return NVML_SUCCESS;
}

// MIG devices in order of GPU instance id, then compute instance id. NOT_FOUND for an empty index.
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                 unsigned int index,
                                                                 nvmlDevice_t* migDevice) {
  unsigned parent = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &parent); rc != NVML_SUCCESS) return rc;
  if (migDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (Table(parent) == nullptr || !MigEnabled(parent)) return NVML_ERROR_NOT_SUPPORTED;
  std::lock_guard<std::mutex> guard(L().mu);
  SharedState::Lock lock(L().state.get());
  struct Entry {
    uint32_t gi_id, ci_id;
    int slot, ci;
  };
  std::vector<Entry> entries;
  for (int i = 0; i < kMaxMigInstances; ++i) {
    const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[i];
    if (r.used == 0 || r.parent != parent) continue;
    for (int c = 0; c < kMaxComputeInstances; ++c) {
      if (r.cis[c].used != 0) entries.push_back({r.id, r.cis[c].id, i, c});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.gi_id != b.gi_id ? a.gi_id < b.gi_id : a.ci_id < b.ci_id;
  });
  if (index >= entries.size()) return NVML_ERROR_NOT_FOUND;
  const Entry& e = entries[index];
  *migDevice = MigDeviceLocked(parent, e.slot, e.ci,
                               L().state->layout()->mig_instances[e.slot].cis[e.ci].generation);
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device,
                                                         unsigned int* isMigDevice) {
  unsigned index = 0;
  int record = 0;
  bool mig = false;
  if (nvmlReturn_t rc = CheckAnyDevice(device, &index, &record, &mig); rc != NVML_SUCCESS) {
    return rc;
  }
  if (isMigDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *isMigDevice = mig ? 1 : 0;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                          nvmlDevice_t* device) {
  unsigned index = 0;
  int record = 0;
  bool mig = false;
  if (nvmlReturn_t rc = CheckAnyDevice(migDevice, &index, &record, &mig); rc != NVML_SUCCESS) {
    return rc;
  }
  if (device == nullptr || !mig) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &L().devices[index];
  return NVML_SUCCESS;
}

static nvmlReturn_t InstanceId(nvmlDevice_t device, unsigned* id, bool compute) {
  unsigned index = 0;
  int record = 0;
  bool mig = false;
  if (nvmlReturn_t rc = CheckAnyDevice(device, &index, &record, &mig); rc != NVML_SUCCESS) {
    return rc;
  }
  if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!mig) return NVML_ERROR_NOT_SUPPORTED;
  SharedState::Lock lock(L().state.get());
  const MigGpuInstanceRecord& r = L().state->layout()->mig_instances[device->slot];
  *id = compute ? r.cis[device->ci].id : r.id;
  return NVML_SUCCESS;
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return InstanceId(device, id, false);
}
SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return InstanceId(device, id, true);
}

// --- Compute mode (kept in the shared state: MPS asks for EXCLUSIVE_PROCESS) ---

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device,
                                                      nvmlComputeMode_t* mode) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  SharedState::Lock lock(L().state.get());
  *mode = static_cast<nvmlComputeMode_t>(L().state->layout()->mig[index].compute_mode);
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (mode != NVML_COMPUTEMODE_DEFAULT && mode != NVML_COMPUTEMODE_PROHIBITED &&
      mode != NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  SharedState::Lock lock(L().state.get());
  L().state->layout()->mig[index].compute_mode = static_cast<uint32_t>(mode);
  return NVML_SUCCESS;
}
