// MIG on the simulated GPU: the state machine behind the simulated NVML's MIG calls, on the shared
// state (shared_state.h), so every process sees the same instances.
//
// Model (docs/simgpu.md, "MIG"):
// - Profiles come from the MIG tables (src/mig/profiles.h) of the device's model; a device whose
//   model has no table does not support MIG.
// - The mode: on Hopper and later (cc >= 9) SetMode takes effect at once; on Ampere it is pending
//   until the device is reset (Reset). Either way the device must be idle: no process holds a
//   context or memory on it or on one of its instances (IN_USE), and disabling needs no GPU
//   instance left (IN_USE).
// - A GPU instance owns memory slices [start, start + size) of a legal placement; overlapping an
//   existing one, or exceeding a profile's most instances, is INSUFFICIENT_RESOURCES. Its id is a
//   function of its placement (size 8: 0; size 4: 1 + start / 4; size 2: 3 + start / 2; size 1:
//   7 + start), so ids are not sequential and a re-created instance keeps its id.
// - Each GPU instance takes device record kMaxDevices + slot: its own memory (the profile's) and
//   kernel timeline. Compute instances share their GPU instance's record.
// - Compute instances split the GPU instance's compute slices (profiles 1, 2, 3, 4 and 7 slices,
//   placed first-fit at multiples of their size). Destroying a GPU instance that still has compute
//   instances, or a compute instance whose GPU instance has processes, is IN_USE.
// - Every create and destroy increments the record's generation: handles made before are stale.
// - MIG device UUIDs are stable for (GPU, GPU instance id, compute instance id).
//
// Every function below needs the SharedState::Lock held. Return values are NVML codes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/nvml_api.h"
#include "common/result.h"
#include "mig/layout.h"
#include "mig/profiles.h"
#include "simgpu/config.h"
#include "simgpu/shared_state.h"

namespace vgpu::simgpu {

// The profile table of `spec`'s model, or nullptr when the model has no MIG.
const mig::ModelTable* MigTableFor(const DeviceSpec& spec);
// True where a mode change needs no reset (Hopper and later).
bool MigModeTogglesWithoutReset(const DeviceSpec& spec);

// The GPU instance id of a placement (see above).
uint32_t MigGpuInstanceId(uint32_t size, uint32_t start);
// "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", derived from the parent UUID and the ids.
std::string MigUuid(const DeviceSpec& parent, uint32_t gi_id, uint32_t ci_id);

// Compute instance profiles: NVML id (= index) and compute slices.
struct MigCiProfile {
  uint32_t id;
  uint32_t slices;
};
// The compute instance profiles a GPU instance of `gi_slices` compute slices offers.
std::vector<MigCiProfile> MigComputeProfiles(uint32_t gi_slices);

class MigState {
 public:
  MigState(SharedStateLayout* layout, const Config* config) : s_(layout), config_(config) {}

  // Sets up device records and modes of a state file just created (config's mig=, mig_layout=).
  void InitializeFromConfig();

  bool Enabled(uint32_t device) const { return s_->mig[device].current == NVML_DEVICE_MIG_ENABLE; }
  nvmlReturn_t SetMode(uint32_t device, uint32_t mode, nvmlReturn_t* activation);
  // A simulated GPU reset: applies a pending mode; GPU instances do not survive it. IN_USE if a
  // process uses the device.
  nvmlReturn_t Reset(uint32_t device);

  // How many more instances of `profile` fit on `device` now.
  uint32_t RemainingCapacity(uint32_t device, const mig::Profile& profile) const;
  // Creates a GPU instance at `start` (or, start < 0, the first legal free one). *slot: its slot.
  nvmlReturn_t CreateGpuInstance(uint32_t device, const mig::Profile& profile, int start,
                                 int* slot);
  nvmlReturn_t DestroyGpuInstance(int slot);
  nvmlReturn_t CreateComputeInstance(int slot, uint32_t ci_profile_id, int* ci);
  nvmlReturn_t DestroyComputeInstance(int slot, int ci);

  // True if a process holds a context or memory on device record `record`.
  bool RecordInUse(int record) const;
  // True if `device` or one of its instances is in use.
  bool DeviceInUse(uint32_t device) const;

  // The slot of the GPU instance with id `gi_id` on `device`, or -1.
  int FindGpuInstance(uint32_t device, uint32_t gi_id) const;

 private:
  uint8_t OccupiedMask(uint32_t device) const;
  int CountOf(uint32_t device, uint32_t profile_id) const;
  void ClearRecord(int record);

  SharedStateLayout* s_;
  const Config* config_;
};

}  // namespace vgpu::simgpu
