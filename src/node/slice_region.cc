#include "node/slice_region.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "shm/region.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"

namespace vgpu::node {

Status CreateSliceRegion(const std::string& path, const ContainerSlice& spec) {
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

namespace {

RegionUsage UsageOf(const shm::Region* region, int device_count) {
  RegionUsage usage;
  for (int d = 0; d < device_count && d < shm::kMaxDevices; ++d) {
    usage.used_bytes.push_back(shm::DeviceUsed(region, d));
  }
  shm::SliceCounters sc;
  if (shm::ReadSliceCounters(region, &sc)) {
    usage.processes = sc.processes;
    usage.counters_read = true;
    SliceCounterValues& v = usage.counters;
    const shm::ProcCounters& t = sc.totals;
    v.counting = sc.counting;
    v.launches = t.launches;
    v.graph_launches = t.graph_launches;
    for (int k = 0; k < shm::kCopyKinds; ++k) v.copy_bytes[k] = t.copy_bytes[k];
    v.allocations = t.allocations;
    v.frees = t.frees;
    v.gate_wait_ns = t.gate_wait_ns;
    v.pause_wait_ns = t.pause_wait_ns;
    v.busy_ns = t.busy_ns;
    v.last_kernel_ns = sc.last_kernel_ns;
    const shm::TenantControl& c = region->header.control;
    v.oom_refusals = shm::LoadU64(c.oom_refusals);
    v.launch_failures = shm::LoadU64(c.launch_failures);
    v.held_launches = shm::LoadU64(c.held_launches);
    for (int d = 0; d < device_count && d < shm::kMaxDevices; ++d) {
      v.peak_bytes.push_back(sc.peak_used[d]);
    }
  } else {
    const int n = shm::SlotsToScan(region);
    for (int s = 0; s < n; ++s) {
      if (shm::LoadPid(region->slots[s]) != 0) ++usage.processes;
    }
  }
  return usage;
}

Status OpenForReading(const std::string& path, shm::Mapping* mapping) {
  shm::RegionError e = shm::Mapping::OpenExisting(path.c_str(), /*writable=*/false, mapping);
  if (e != shm::RegionError::kOk) {
    return Status::Unavailable("accounting region " + path + ": " + shm::RegionErrorText(e));
  }
  return Status::Ok();
}

}  // namespace

Result<RegionUsage> ReadSliceRegion(const std::string& path, int device_count) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::NotFound(path + " does not exist yet");
  shm::Mapping mapping;
  VGPU_RETURN_IF_ERROR(OpenForReading(path, &mapping));
  return UsageOf(mapping.region(), device_count);
}

struct RegionCache::Impl {
  struct Entry {
    dev_t dev = 0;
    ino_t ino = 0;
    shm::Mapping mapping;
  };
  mutable std::mutex mu;
  std::map<std::string, Entry> entries;
};

RegionCache::RegionCache() : impl_(std::make_unique<Impl>()) {}
RegionCache::~RegionCache() = default;

Result<RegionUsage> RegionCache::Read(const std::string& path, int device_count) {
  struct stat st;
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (::stat(path.c_str(), &st) != 0) {
    impl_->entries.erase(path);
    return Status::NotFound(path + " does not exist yet");
  }
  auto it = impl_->entries.find(path);
  if (it == impl_->entries.end() || it->second.dev != st.st_dev || it->second.ino != st.st_ino) {
    Impl::Entry entry;
    Status s = OpenForReading(path, &entry.mapping);
    if (!s.ok()) {
      impl_->entries.erase(path);
      return s;
    }
    entry.dev = st.st_dev;
    entry.ino = st.st_ino;
    it = impl_->entries.insert_or_assign(path, std::move(entry)).first;
  }
  return UsageOf(it->second.mapping.region(), device_count);
}

void RegionCache::Retain(const std::vector<std::string>& keep) {
  std::set<std::string> wanted(keep.begin(), keep.end());
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto it = impl_->entries.begin(); it != impl_->entries.end();) {
    it = wanted.count(it->first) ? std::next(it) : impl_->entries.erase(it);
  }
}

size_t RegionCache::size() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->entries.size();
}

}  // namespace vgpu::node
