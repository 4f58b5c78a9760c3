#include "slice/resize.h"

#include <errno.h>

#include "common/units.h"
#include "shm/arbiter.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"

namespace vgpu::slice {
namespace {

std::string Bytes(uint64_t b) { return b == shm::kNoLimit ? "unlimited" : FormatBytes(b); }
std::string Cores(uint32_t c) { return c == 0 ? "all" : std::to_string(c) + "%"; }

}  // namespace

Result<SliceResizeResult> ResizeSlice(const std::string& region_path, const SliceResize& change) {
  if (!change.memory && !change.cores && !change.priority) {
    return Status::InvalidArgument("nothing to change: give --memory, --cores or --priority");
  }
  if (change.priority &&
      (*change.priority < shm::kPriorityRealtime || *change.priority > shm::kPriorityIdle)) {
    return Status::InvalidArgument("--priority: " + std::to_string(*change.priority) +
                                   ": must be a level 0-4");
  }
  if (change.cores && (*change.cores < 1 || *change.cores > 100)) {
    return Status::InvalidArgument("--cores: \"" + std::to_string(*change.cores) +
                                   "\": must be 1-100");
  }
  if (change.memory && *change.memory == 0) {
    return Status::InvalidArgument("--memory: must be above 0");
  }
  shm::Mapping mapping;
  shm::RegionError e = shm::Mapping::OpenExisting(region_path.c_str(), true, &mapping);
  if (e == shm::RegionError::kIo && mapping.saved_errno() == ENOENT) {
    return Status::NotFound("no slice region " + region_path);
  }
  if (e != shm::RegionError::kOk) {
    return Status::IoError("slice region " + region_path + ": " + shm::RegionErrorText(e));
  }
  shm::Region* region = mapping.region();
  const int devices = static_cast<int>(region->header.config.device_count);
  if (change.device >= devices) {
    return Status::InvalidArgument("--device: " + std::to_string(change.device) +
                                   ": the slice has " + std::to_string(devices) + " device(s)");
  }
  shm::ResizeRequest request;
  std::string summary;
  for (int d = 0; d < devices; ++d) {
    if (change.device >= 0 && d != change.device) continue;
    std::string part;
    if (change.memory) {
      request.memory_limit[d] = *change.memory;
      part +=
          "memory " + Bytes(shm::MemoryLimitInForce(region, d)) + " -> " + Bytes(*change.memory);
    }
    if (change.cores) {
      request.sm_limit[d] = static_cast<uint32_t>(*change.cores);
      uint32_t now = *change.cores >= 100 ? 0 : static_cast<uint32_t>(*change.cores);
      part += std::string(part.empty() ? "" : ", ") + "cores " +
              Cores(shm::SmLimitInForce(region, d)) + " -> " + Cores(now);
    }
    summary += (summary.empty() ? "" : "; ") + part + " (device " + std::to_string(d) + ")";
  }
  if (change.priority) {
    request.priority = *change.priority;
    summary += std::string(summary.empty() ? "" : "; ") + "priority " +
               shm::PriorityName(shm::PriorityInForce(region)) + " -> " +
               shm::PriorityName(*change.priority);
  }
  shm::ResizeRefusal why;
  e = shm::ResizeRegion(region, request, shm::CurrentProcIdentity(), &why);
  if (e == shm::RegionError::kOverLimit) {
    return Status::FailedPrecondition(
        "refused: device " + std::to_string(why.device) + " has " + FormatBytes(why.used) +
        " in use, more than the asked memory limit " + FormatBytes(why.asked) +
        " (a limit can shrink only down to what is in use); nothing was changed");
  }
  if (e != shm::RegionError::kOk) {
    return Status::IoError("slice region " + region_path + ": " + shm::RegionErrorText(e));
  }
  SliceResizeResult result;
  result.summary = summary;
  result.seq = shm::ResizeSeq(region);
  return result;
}

}  // namespace vgpu::slice
