#include "node/slice_region.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#ifdef VGPU_NODE_HAVE_SHM
#include "shm/region.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"
#endif

namespace vgpu::node {

#ifdef VGPU_NODE_HAVE_SHM

Status CreateSliceRegion(const std::string& path, const SliceSpec& spec) {
  shm::RegionConfig config{};
  config.device_count = static_cast<uint32_t>(spec.devices.size());
  config.priority = spec.Level();
  for (int i = 0; i < shm::kMaxDevices; ++i) {
    config.memory_limit[i] = shm::kNoLimit;
    config.sm_limit[i] = 0;
  }
  if (spec.devices.size() > static_cast<size_t>(shm::kMaxDevices)) {
    return Status::InvalidArgument("a slice may span at most 16 GPUs");
  }
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    config.memory_limit[i] = spec.devices[i].memory_bytes;
    config.sm_limit[i] = spec.devices[i].cores >= 100 ? 0 : spec.devices[i].cores;
  }
  shm::Mapping mapping;
  shm::RegionError e = shm::Mapping::OpenOrCreate(path.c_str(), config, &mapping);
  if (e != shm::RegionError::kOk) {
    return Status::IoError("accounting region " + path + ": " + shm::RegionErrorText(e));
  }
  // Any user of the container may join the region.
  ::chmod(path.c_str(), 0666);
  return Status::Ok();
}

Result<RegionUsage> ReadSliceRegion(const std::string& path, int device_count) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::NotFound(path + " does not exist yet");
  shm::Mapping mapping;
  shm::RegionError e = shm::Mapping::OpenExisting(path.c_str(), /*writable=*/false, &mapping);
  if (e != shm::RegionError::kOk) {
    return Status::Unavailable("accounting region " + path + ": " + shm::RegionErrorText(e));
  }
  const shm::Region* region = mapping.region();
  RegionUsage usage;
  for (int d = 0; d < device_count && d < shm::kMaxDevices; ++d) {
    usage.used_bytes.push_back(shm::DeviceUsed(region, d));
  }
  for (int s = 0; s < shm::kMaxProcs; ++s) {
    if (shm::LoadPid(region->slots[s]) != 0) ++usage.processes;
  }
  return usage;
}

#else  // no src/shm in this build

Status CreateSliceRegion(const std::string&, const SliceSpec&) { return Status::Ok(); }

Result<RegionUsage> ReadSliceRegion(const std::string& path, int) {
  return Status::Unavailable("cannot read " + path + ": built without the shm library");
}

#endif

}  // namespace vgpu::node
