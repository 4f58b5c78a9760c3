// Puts each GPU of the node into its configured mode when the daemon starts (gpu_modes.h), and
// keeps the MIG view of NodeState current.
//
// A change (MIG on or off, a static layout, the MPS daemon) is made only on an idle GPU: no
// process on it (DeviceBackend::Sample), no container slice on it (`assigned`: the GPU indices
// that slices surviving a restart use) and, for MIG mode changes, no MIG instance in use. A GPU
// that cannot be changed now keeps what it is, and that is what the daemon advertises: a GPU with
// MIG on stays `mig` with the instances it has (static), one with MIG off stays `shared`. Each
// outcome is logged and returned, never forced. A mig-dynamic GPU whose model has no exact MIG
// table (mig/profiles.h) is still set up (NVML's own profiles serve DRA), with one warning that
// the scheduler extender makes no MIG offers on it.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "device/device_backend.h"
#include "mig/profiles.h"
#include "node/modes/gpu_modes.h"
#include "node/modes/mps.h"
#include "node/node_state.h"

namespace vgpu::node {

struct GpuModeOutcome {
  int index = 0;
  GpuMode wanted = GpuMode::kShared;
  GpuMode mode = GpuMode::kShared;  // what the GPU is in now
  std::string report;               // "applied", "already so", or why not
};

// `mps` may be null when no GPU is in mode mps.
std::vector<GpuModeOutcome> SetUpGpuModes(device::DeviceBackend* backend, NodeState* state,
                                          const GpuModeConfig& config, MpsManager* mps,
                                          const std::set<int>& assigned = {});

// Reads the MIG instances of every mig and mig-dynamic GPU into `state`.
void RefreshMigInstances(device::DeviceBackend* backend, NodeState* state);

// The MIG table of exactly this GPU's model (its NVML name, total memory and PCI device id:
// mig::IdentifyModel), or none with the reason.
mig::ModelMatch MigModelOf(const device::DeviceInfo& d);
// Its key ("H200"), "" when vgpu has no table for it.
std::string MigModelKey(const device::DeviceInfo& d);

}  // namespace vgpu::node
