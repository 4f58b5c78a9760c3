// Admission of `vgpu run --memory-mode spill` on this machine: the rule of spill_admission.h
// applied to the GPUs the slice will use, with what this machine's live slices (the registry,
// shm/slice_registry.h) already promise and spill.
//
// For each GPU of the slice (--device, else GPU 0):
//   promised = the memory limits of the live slices on it + this slice's limit
//   spill    = min(this slice's limit, promised - the GPU's memory), at least 0: the part of the
//              promise the GPU cannot hold, which lands on the spilling slices
//   already  = bytes the live slices have spilled now (their regions' SpillState)
// and AdmitSpill() decides with the host's MemAvailable (/proc/meminfo, or the file named by
// VGPU_MEMINFO, for tests) minus --spill-headroom, and --spill-ratio.
//
// Live slices are those whose creator still runs. The GPUs are listed through NVML (the simulated
// one with --sim); when NVML cannot list them the spill is refused (fail closed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/slice_setup.h"
#include "common/status.h"
#include "device/device_backend.h"
#include "shm/slice_registry.h"

namespace vgpu::cli {

struct RunSpillPolicy {
  uint64_t headroom = 4ULL << 30;
  double max_ratio = 1.5;
};

// Pure: the decision for `spec` on `gpus` (this machine's, by NVML index) beside `slices`.
// OK when admitted; kFailedPrecondition with the reason (naming the GPU) when not.
Status AdmitSpillOnGpus(const SliceSpec& spec, const std::vector<device::DeviceInfo>& gpus,
                        const std::vector<shm::SliceEntry>& slices, uint64_t host_available,
                        const RunSpillPolicy& policy);

// Reads the machine (NVML at `nvml_path`, the registry, meminfo) and decides.
Status AdmitRunSpill(const SliceSpec& spec, const std::string& nvml_path,
                     const RunSpillPolicy& policy);

}  // namespace vgpu::cli
