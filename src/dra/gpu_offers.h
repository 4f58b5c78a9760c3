// What `vgpu dra` offers on each GPU, by its mode (node/modes/gpu_modes.h, `--gpu-modes FILE`):
//
//   shared, whole, mps (and every GPU without a mode file)
//                 the whole-GPU software device gpu-<i> only;
//   mig           one MIG device per complete instance of the GPU's static layout (its MIG UUID
//                 known), and no software device: the GPU runs MIG with a fixed layout;
//   mig-dynamic   the software device and one MIG device per legal (profile, placement) the
//                 driver reports. They exclude each other through the GPU's counters
//                 (dra/resource_slices.h), so the scheduler gives out either software slices or
//                 MIG devices of one GPU, never both; Prepare puts the GPU into the MIG mode the
//                 claim needs (dra/driver.h).
//
// StaticMigDevices and DynamicMigDevices are pure; PlanGpuOffers only reads; SetUpGpuOffers changes
// the GPUs (through node/modes/gpu_mode_setup.h: only idle GPUs, each outcome logged) and reads
// what the driver reports.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "device/device_backend.h"
#include "dra/resource_slices.h"
#include "node/modes/gpu_modes.h"

namespace vgpu::dra {

struct GpuOffer {
  node::GpuMode mode = node::GpuMode::kShared;
  bool software = true;
  std::vector<MigDeviceSpec> mig;  // in the order published

  bool Dynamic() const { return mode == node::GpuMode::kMigDynamic; }
};

// One device per complete instance (a compute instance over it), by start.
std::vector<MigDeviceSpec> StaticMigDevices(const std::vector<device::MigInstance>& instances);
// One device per profile and legal start, in the driver's profile order, starts increasing.
std::vector<MigDeviceSpec> DynamicMigDevices(const std::vector<device::MigProfileInfo>& profiles);

// The profiles of vgpu's MIG table of exactly this GPU's model (node::MigModelOf: name, memory,
// PCI id), as a driver reports them; empty for a model without a table (no MIG offers).
std::vector<device::MigProfileInfo> TableMigProfiles(const device::DeviceInfo& gpu);

// Puts each of `gpus` into its mode of `config`, except those in `busy` (GPU indices that
// prepared claims use: they keep what they are), and returns the offers by GPU position. A
// mig-dynamic GPU whose profiles neither the driver (MIG off) nor vgpu's tables tell offers the
// software device only, with a warning.
// What SetUpGpuOffers would offer, changing nothing (`vgpu dra --dry-run`): the mode of each GPU
// by `config`; a static `mig` GPU offers the instances it has now (none before its layout is
// made).
std::vector<GpuOffer> PlanGpuOffers(device::DeviceBackend* backend,
                                    const std::vector<device::DeviceInfo>& gpus,
                                    const node::GpuModeConfig& config);

std::vector<GpuOffer> SetUpGpuOffers(device::DeviceBackend* backend,
                                     const std::vector<device::DeviceInfo>& gpus,
                                     const node::GpuModeConfig& config, const std::set<int>& busy);

}  // namespace vgpu::dra
