// What `vgpu dra --dry-run` prints: the ResourceSlices and CDI specs the driver would publish
// for this node's GPUs, with no API server and no kubelet, writing and changing nothing:
//
//   {"driver": "gpu.vgpu.io", "node": "<node>", "layout": "1.35",
//    "resourceSlices": [<ResourceSlice>, ...],            generation 1
//    "cdiSpecs": [{"device": "gpu-0", "claim": "dry-run/gpu-0",
//                  "path": "<cdi dir>/vgpu.io-gpu_dry-run-gpu-0.json", "spec": <CDI spec>}, ...],
//    "notes": ["..."]}
//
// One CDI spec per device a claim can be prepared on without a MIG instance being made: each
// published whole-GPU device, for a claim that asks no capacity (all of the GPU's memory and
// cores), and each instance of a static MIG layout; the spec is Driver::PlanCdiSpec's, so its
// host paths are those of the driver's flags (--state-dir, --libvgpu, --arbiter-dir, --cdi-dir).
// MIG devices of mig-dynamic GPUs are counted in a note instead: their instance, and so their
// spec, exists only once a claim is prepared. An unhealthy GPU gets no spec.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "device/device_backend.h"
#include "dra/driver.h"
#include "dra/gpu_offers.h"
#include "dra/resource_slices.h"

namespace vgpu::dra {

struct DryRunInput {
  DriverOptions options;                     // pool: the node's name
  std::vector<device::DeviceInfo> gpus;      // as discovered
  std::vector<SliceGpu> slice_gpus;          // what the slices describe (Agent::Gpus())
  std::vector<GpuOffer> offers;              // by GPU position (PlanGpuOffers)
  device::DeviceBackend* backend = nullptr;  // read only (static MIG instances)
  SliceLayout layout = SliceLayout::kCountersApart;
};

nlohmann::json DryRun(const DryRunInput& input);

}  // namespace vgpu::dra
