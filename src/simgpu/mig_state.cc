#include "simgpu/mig_state.h"

#include <cstdio>
#include <cstring>

namespace vgpu::simgpu {
namespace {

constexpr uint32_t kCiSlices[] = {1, 2, 3, 4, 7};  // CI profile ids 0..4

}  // namespace

// The simulated device identifies itself as a real one does: its name, total memory and PCI
// device id (mig::IdentifyModel), so only the presets' own memory sizes have MIG.
const mig::ModelTable* MigTableFor(const DeviceSpec& spec) {
  return mig::IdentifyModel(
             {spec.name, static_cast<int64_t>(spec.memory_bytes >> 20), spec.pci_device_id})
      .table;
}

bool MigModeTogglesWithoutReset(const DeviceSpec& spec) { return spec.cc_major >= 9; }

uint32_t MigGpuInstanceId(uint32_t size, uint32_t start) {
  switch (size) {
    case 8:
      return 0;
    case 4:
      return 1 + start / 4;
    case 2:
      return 3 + start / 2;
    default:
      return 7 + start;
  }
}

std::string MigUuid(const DeviceSpec& parent, uint32_t gi_id, uint32_t ci_id) {
  std::string key = parent.uuid + "/gi" + std::to_string(gi_id) + "/ci" + std::to_string(ci_id);
  uint64_t a = Fnv1a(key);
  uint64_t b = Fnv1a(key, a ^ 0x9e3779b97f4a7c15ULL);
  std::array<uint8_t, 16> bytes{};
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<uint8_t>(a >> (56 - 8 * i));
    bytes[8 + i] = static_cast<uint8_t>(b >> (56 - 8 * i));
  }
  return "MIG-" + FormatUuid(bytes).substr(4);
}

std::vector<MigCiProfile> MigComputeProfiles(uint32_t gi_slices) {
  std::vector<MigCiProfile> out;
  for (uint32_t id = 0; id < std::size(kCiSlices); ++id) {
    if (kCiSlices[id] <= gi_slices) out.push_back({id, kCiSlices[id]});
  }
  return out;
}

void MigState::InitializeFromConfig() {
  for (size_t d = 0; d < config_->devices.size(); ++d) {
    const DeviceSpec& spec = config_->devices[d];
    uint32_t mode = spec.mig_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    s_->mig[d].current = s_->mig[d].pending = mode;
    const mig::ModelTable* table = MigTableFor(spec);
    if (!spec.mig_enabled || table == nullptr || spec.mig_layout.empty()) continue;
    Result<mig::Layout> layout = mig::ParseLayout(*table, spec.mig_layout);
    if (!layout) continue;  // validated when the configuration was parsed
    for (const mig::Instance& inst : layout->instances) {
      const mig::Profile& p = table->profiles[inst.profile];
      int slot = -1;
      int ci = -1;
      if (CreateGpuInstance(static_cast<uint32_t>(d), p, inst.start, &slot) != NVML_SUCCESS) {
        continue;
      }
      CreateComputeInstance(slot, MigComputeProfiles(p.compute_slices).back().id, &ci);
    }
  }
}

bool MigState::RecordInUse(int record) const {
  for (const ProcessRecord& p : s_->processes) {
    if (p.pid != 0 && (p.contexts[record] != 0 || p.used_bytes[record] != 0)) return true;
  }
  return false;
}

bool MigState::DeviceInUse(uint32_t device) const {
  if (RecordInUse(static_cast<int>(device))) return true;
  for (int i = 0; i < kMaxMigInstances; ++i) {
    const MigGpuInstanceRecord& gi = s_->mig_instances[i];
    if (gi.used != 0 && gi.parent == device && RecordInUse(kMaxDevices + i)) return true;
  }
  return false;
}

nvmlReturn_t MigState::SetMode(uint32_t device, uint32_t mode, nvmlReturn_t* activation) {
  if (mode != NVML_DEVICE_MIG_ENABLE && mode != NVML_DEVICE_MIG_DISABLE) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const DeviceSpec& spec = config_->devices[device];
  if (MigTableFor(spec) == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  if (DeviceInUse(device)) {
    *activation = NVML_ERROR_IN_USE;
    return NVML_ERROR_IN_USE;
  }
  if (mode == NVML_DEVICE_MIG_DISABLE) {
    for (const MigGpuInstanceRecord& gi : s_->mig_instances) {
      if (gi.used != 0 && gi.parent == device) {
        *activation = NVML_ERROR_IN_USE;
        return NVML_ERROR_IN_USE;
      }
    }
  }
  s_->mig[device].pending = mode;
  if (MigModeTogglesWithoutReset(spec)) {
    s_->mig[device].current = mode;
    *activation = NVML_SUCCESS;
  } else {
    *activation = s_->mig[device].current == mode ? NVML_SUCCESS : NVML_ERROR_RESET_REQUIRED;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t MigState::Reset(uint32_t device) {
  if (DeviceInUse(device)) return NVML_ERROR_IN_USE;
  for (int i = 0; i < kMaxMigInstances; ++i) {
    MigGpuInstanceRecord& gi = s_->mig_instances[i];
    if (gi.used == 0 || gi.parent != device) continue;
    for (MigComputeRecord& ci : gi.cis) {
      if (ci.used != 0) {
        ci.used = 0;
        ci.generation++;
      }
    }
    gi.used = 0;
    gi.generation++;
    ClearRecord(kMaxDevices + i);
  }
  s_->mig[device].current = s_->mig[device].pending;
  return NVML_SUCCESS;
}

uint8_t MigState::OccupiedMask(uint32_t device) const {
  uint8_t mask = 0;
  for (const MigGpuInstanceRecord& gi : s_->mig_instances) {
    if (gi.used != 0 && gi.parent == device) {
      mask |= static_cast<uint8_t>(((1u << gi.size) - 1u) << gi.start);
    }
  }
  return mask;
}

int MigState::CountOf(uint32_t device, uint32_t profile_id) const {
  int n = 0;
  for (const MigGpuInstanceRecord& gi : s_->mig_instances) {
    if (gi.used != 0 && gi.parent == device && gi.profile_id == profile_id) ++n;
  }
  return n;
}

uint32_t MigState::RemainingCapacity(uint32_t device, const mig::Profile& profile) const {
  // Greedy in placement order over the free slices: how many more fit side by side.
  uint8_t occupied = OccupiedMask(device);
  int left = profile.max_count - CountOf(device, static_cast<uint32_t>(profile.profile_id));
  uint32_t n = 0;
  for (int start : profile.Starts()) {
    if (static_cast<int>(n) >= left) break;
    if ((occupied & profile.SliceMask(start)) != 0) continue;
    occupied |= profile.SliceMask(start);
    ++n;
  }
  return n;
}

void MigState::ClearRecord(int record) {
  DeviceRecord& r = s_->devices[record];
  std::memset(&r, 0, sizeof(r));
  for (int p = 0; p < kMaxProcesses; ++p) {
    std::memset(s_->process_buckets[record][p], 0, sizeof(s_->process_buckets[record][p]));
    ProcessRecord& pr = s_->processes[p];
    pr.busy_ns[record] = pr.wait_ns[record] = pr.kernels[record] = 0;
  }
}

nvmlReturn_t MigState::CreateGpuInstance(uint32_t device, const mig::Profile& profile, int start,
                                         int* slot) {
  if (!Enabled(device)) return NVML_ERROR_NOT_SUPPORTED;
  uint8_t occupied = OccupiedMask(device);
  if (start < 0) {
    for (int s : profile.Starts()) {
      if ((occupied & profile.SliceMask(s)) == 0) {
        start = s;
        break;
      }
    }
    if (start < 0) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  if (!profile.LegalStart(start)) return NVML_ERROR_INVALID_ARGUMENT;
  if ((occupied & profile.SliceMask(start)) != 0) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if (CountOf(device, static_cast<uint32_t>(profile.profile_id)) >= profile.max_count) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  int free_slot = -1;
  for (int i = 0; i < kMaxMigInstances && free_slot < 0; ++i) {
    if (s_->mig_instances[i].used == 0) free_slot = i;
  }
  if (free_slot < 0) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  MigGpuInstanceRecord& gi = s_->mig_instances[free_slot];
  uint32_t generation = gi.generation + 1;
  std::memset(&gi, 0, sizeof(gi));
  gi.generation = generation;
  gi.parent = device;
  gi.profile_id = static_cast<uint32_t>(profile.profile_id);
  gi.start = static_cast<uint32_t>(start);
  gi.size = static_cast<uint32_t>(profile.memory_slices);
  gi.id = MigGpuInstanceId(gi.size, gi.start);
  gi.sm_slices = static_cast<uint32_t>(profile.compute_slices);
  gi.sm_count = static_cast<uint32_t>(profile.sm_count);
  gi.memory_bytes = static_cast<uint64_t>(profile.memory_mib) << 20;
  std::snprintf(gi.profile_name, sizeof(gi.profile_name), "%.*s",
                static_cast<int>(profile.name.size()), profile.name.data());
  int record = kMaxDevices + free_slot;
  ClearRecord(record);
  s_->devices[record].total_bytes = gi.memory_bytes;
  s_->devices[record].settled_until_ns = MonotonicNs();
  gi.used = 1;
  *slot = free_slot;
  return NVML_SUCCESS;
}

nvmlReturn_t MigState::DestroyGpuInstance(int slot) {
  MigGpuInstanceRecord& gi = s_->mig_instances[slot];
  if (gi.used == 0) return NVML_ERROR_INVALID_ARGUMENT;
  for (const MigComputeRecord& ci : gi.cis) {
    if (ci.used != 0) return NVML_ERROR_IN_USE;
  }
  if (RecordInUse(kMaxDevices + slot)) return NVML_ERROR_IN_USE;
  gi.used = 0;
  gi.generation++;
  ClearRecord(kMaxDevices + slot);
  return NVML_SUCCESS;
}

nvmlReturn_t MigState::CreateComputeInstance(int slot, uint32_t ci_profile_id, int* ci) {
  MigGpuInstanceRecord& gi = s_->mig_instances[slot];
  if (gi.used == 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (ci_profile_id >= std::size(kCiSlices) || kCiSlices[ci_profile_id] > gi.sm_slices) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  uint32_t size = kCiSlices[ci_profile_id];
  uint32_t used_slices = 0;
  uint32_t used_ids = 0;
  for (const MigComputeRecord& c : gi.cis) {
    if (c.used == 0) continue;
    used_slices |= ((1u << c.size) - 1u) << c.start;
    used_ids |= 1u << c.id;
  }
  int start = -1;
  for (uint32_t s = 0; s + size <= gi.sm_slices; s += size) {
    if ((used_slices & (((1u << size) - 1u) << s)) == 0) {
      start = static_cast<int>(s);
      break;
    }
  }
  if (start < 0) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  int free_ci = -1;
  for (int i = 0; i < kMaxComputeInstances && free_ci < 0; ++i) {
    if (gi.cis[i].used == 0) free_ci = i;
  }
  if (free_ci < 0) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  uint32_t id = 0;
  while (used_ids & (1u << id)) ++id;
  MigComputeRecord& c = gi.cis[free_ci];
  c.generation++;
  c.id = id;
  c.profile_id = ci_profile_id;
  c.start = static_cast<uint32_t>(start);
  c.size = size;
  c.sm_count = size == gi.sm_slices ? gi.sm_count : gi.sm_count * size / gi.sm_slices;
  c.used = 1;
  *ci = free_ci;
  return NVML_SUCCESS;
}

nvmlReturn_t MigState::DestroyComputeInstance(int slot, int ci) {
  MigGpuInstanceRecord& gi = s_->mig_instances[slot];
  if (gi.used == 0 || ci < 0 || ci >= kMaxComputeInstances || gi.cis[ci].used == 0) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (RecordInUse(kMaxDevices + slot)) return NVML_ERROR_IN_USE;
  gi.cis[ci].used = 0;
  gi.cis[ci].generation++;
  return NVML_SUCCESS;
}

int MigState::FindGpuInstance(uint32_t device, uint32_t gi_id) const {
  for (int i = 0; i < kMaxMigInstances; ++i) {
    const MigGpuInstanceRecord& gi = s_->mig_instances[i];
    if (gi.used != 0 && gi.parent == device && gi.id == gi_id) return i;
  }
  return -1;
}

}  // namespace vgpu::simgpu
