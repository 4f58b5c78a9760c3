// Admission of `vgpu run --memory-mode spill` on this machine: the rule of slice/spill_admission.h
// applied to the GPUs the slice will use, with what this machine's live slices (the registry,
// slice/registry.h) already promise and spill.
//
// The GPUs are the slice's (--device, else GPU 0); what the other live slices promise on each is
// the sum of their regions' memory limits there; what they spill now, their regions' SpillState;
// AdmitSpillOnGpus() decides with the host's MemAvailable (/proc/meminfo, or the file named by
// VGPU_MEMINFO, for tests), --spill-headroom and --spill-ratio.
//
// Live slices are those whose creator still runs. The GPUs are listed through NVML (the simulated
// one with --sim); when NVML cannot list them the spill is refused (fail closed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "device/device_backend.h"
#include "slice/registry.h"
#include "slice/slice_dir.h"
#include "slice/spill_admission.h"

namespace vgpu::cli {

// Pure: the decision for `spec` on `gpus` (this machine's, by NVML index) beside `slices`.
// OK when admitted; kFailedPrecondition with the reason (naming the GPU) when not.
Status AdmitSpillOnGpus(const slice::SliceSpec& spec, const std::vector<device::DeviceInfo>& gpus,
                        const std::vector<slice::SliceEntry>& slices, uint64_t host_available,
                        const slice::SpillPolicy& policy);

// Reads the machine (NVML at `nvml_path`, the registry, meminfo) and decides.
Status AdmitRunSpill(const slice::SliceSpec& spec, const std::string& nvml_path,
                     const slice::SpillPolicy& policy);

}  // namespace vgpu::cli
