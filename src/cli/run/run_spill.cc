#include "cli/run/run_spill.h"

#include <cstdlib>

#include "device/nvml_backend.h"
#include "slice/host_memory.h"

namespace vgpu::cli {
namespace {

// The GPUs the slice uses: --device entries (indices or UUIDs), else GPU 0.
std::vector<const device::DeviceInfo*> SliceGpus(const slice::SliceSpec& spec,
                                                 const std::vector<device::DeviceInfo>& gpus) {
  std::vector<const device::DeviceInfo*> out;
  if (spec.devices.empty()) {
    if (!gpus.empty()) out.push_back(&gpus[0]);
    return out;
  }
  for (const std::string& d : spec.devices) {
    for (const device::DeviceInfo& g : gpus) {
      if (d == g.uuid || d == std::to_string(g.index)) out.push_back(&g);
    }
  }
  return out;
}

// Device index `d` of a live slice's region is on `gpu` (by UUID when the region names one).
bool OnGpu(const shm::Region& r, int d, const device::DeviceInfo& gpu) {
  if (r.header.uuid[d][0] != '\0') return gpu.uuid == r.header.uuid[d];
  return d == gpu.index;
}

}  // namespace

Status AdmitSpillOnGpus(const slice::SliceSpec& spec, const std::vector<device::DeviceInfo>& gpus,
                        const std::vector<slice::SliceEntry>& slices, uint64_t host_available,
                        const slice::SpillPolicy& policy) {
  uint64_t already = 0;
  for (const slice::SliceEntry& e : slices) {
    if (e.error.empty() && e.creator_alive) already += e.region.header.spill.spilled_bytes;
  }
  std::vector<slice::SpillGpu> asked;
  for (const device::DeviceInfo* gpu : SliceGpus(spec, gpus)) {
    slice::SpillGpu g{"GPU " + std::to_string(gpu->index), gpu->memory_total_bytes, 0, spec.memory};
    for (const slice::SliceEntry& e : slices) {
      if (!e.error.empty() || !e.creator_alive) continue;
      const shm::RegionConfig& c = e.region.header.config;
      for (int d = 0; d < static_cast<int>(c.device_count) && d < shm::kMaxDevices; ++d) {
        if (c.memory_limit[d] != shm::kNoLimit && OnGpu(e.region, d, *gpu)) {
          g.promised_by_others += c.memory_limit[d];
        }
      }
    }
    asked.push_back(g);
  }
  if (asked.empty()) {
    return Status::FailedPrecondition(
        "spill refused: the slice's GPUs could not be found to check the spill against");
  }
  slice::SpillDecision d = slice::AdmitSpillOnGpus(asked, already, host_available, policy);
  if (d.admitted) return Status::Ok();
  return Status::FailedPrecondition("spill refused on " + d.reason);
}

Status AdmitRunSpill(const slice::SliceSpec& spec, const std::string& nvml_path,
                     const slice::SpillPolicy& policy) {
  device::NvmlBackendOptions options;
  options.library_path = nvml_path;
  options.cuda_library_path.clear();
  auto backend = device::NvmlBackend::Open(options);
  if (!backend) {
    return Status::FailedPrecondition("spill refused: cannot list the GPUs to check the spill: " +
                                      backend.error().message());
  }
  auto gpus = (*backend)->Discover();
  if (!gpus) {
    return Status::FailedPrecondition("spill refused: NVML did not list the GPUs: " +
                                      gpus.error().message());
  }
  const char* meminfo = std::getenv("VGPU_MEMINFO");
  uint64_t host =
      slice::ReadMemAvailable(meminfo != nullptr && *meminfo != '\0' ? meminfo : "/proc/meminfo");
  return AdmitSpillOnGpus(spec, *gpus, slice::ReadSlices(slice::DefaultStateDir()), host, policy);
}

}  // namespace vgpu::cli
