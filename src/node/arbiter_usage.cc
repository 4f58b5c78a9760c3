#include "node/arbiter_usage.h"

#include <time.h>

#include <cstring>
#include <memory>

#include "slice/compute_settings.h"

#include "shm/arbiter.h"
#include "shm/arbiter_file.h"
#include "shm/arbiter_policy.h"

namespace vgpu::node {

const ArbiterSliceUsage* ArbiterUsage::Find(uint64_t key) const {
  for (const ArbiterSliceUsage& s : slices) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

namespace {

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

ArbiterUsage ReadOne(const std::string& dir, const std::string& uuid, uint64_t now) {
  ArbiterUsage u;
  u.uuid = uuid;
  char path[1024];
  if (!shm::ArbiterPath(dir.c_str(), uuid.c_str(), path, sizeof path)) {
    u.error = "no arbiter path for " + uuid + " in " + dir;
    return u;
  }
  u.path = path;
  shm::ArbiterMapping mapping;
  shm::RegionError e = shm::ArbiterMapping::OpenExisting(path, /*writable=*/false, &mapping);
  if (e != shm::RegionError::kOk) {
    u.error = shm::RegionErrorText(e);
    return u;
  }
  // A private snapshot: the live file keeps changing under us.
  auto snapshot = std::make_unique<shm::Arbiter>();
  std::memcpy(snapshot.get(), mapping.arbiter(), sizeof(shm::Arbiter));
  const shm::Arbiter& a = *snapshot;
  u.turns = a.header.turns;
  u.preemptions = a.header.preemptions;
  const int owner = a.header.owner;
  for (int i = 0; i < shm::kMaxArbiterSlices; ++i) {
    const shm::ArbiterSlice& r = a.slices[i];
    if (r.key == 0) continue;
    ArbiterSliceUsage s;
    s.key = r.key;
    s.name = std::string(r.name, strnlen(r.name, sizeof r.name));
    s.max_pct = static_cast<int>(r.config.max_pct);
    s.guarantee_pct = static_cast<int>(r.config.guarantee_pct);
    s.weight = static_cast<int>(r.config.weight);
    s.level = r.config.level;
    s.elastic = r.config.mode == shm::kModeElastic;
    s.time_slice_ns = r.config.time_slice_ns;
    s.members = r.members;
    s.waiters = r.waiters;
    s.achieved = static_cast<double>(shm::SliceUsageInWindow(r, now, 1'000'000'000ULL)) / 1e9;
    s.used_ns = r.used_ns;
    s.kernels = r.kernels;
    s.held_ns = r.held_ns;
    s.turns = r.turns;
    s.preempted = r.preempted;
    if (r.kernels > 0 && r.last_launch_ns != 0 && r.last_launch_ns <= now) {
      s.idle_seconds = static_cast<double>(now - r.last_launch_ns) / 1e9;
    } else if (r.kernels > 0) {
      s.idle_seconds = 0;
    }
    if (i == owner) u.owner_key = r.key;
    u.slices.push_back(std::move(s));
  }
  return u;
}

}  // namespace

Status CreateArbiters(const std::string& dir, const std::vector<std::string>& uuids) {
  for (const std::string& uuid : uuids) {
    char path[1024];
    if (!shm::ArbiterPath(dir.c_str(), uuid.c_str(), path, sizeof path)) {
      return Status::InvalidArgument("no arbiter path for " + uuid + " in " + dir);
    }
    shm::ArbiterMapping mapping;
    shm::RegionError e = shm::ArbiterMapping::OpenOrCreate(path, uuid.c_str(), &mapping);
    if (e != shm::RegionError::kOk) {
      std::string why = shm::RegionErrorText(e);
      if (e == shm::RegionError::kIo)
        why += std::string(": ") + std::strerror(mapping.saved_errno());
      return Status::IoError("compute arbiter " + std::string(path) + ": " + why);
    }
  }
  return Status::Ok();
}

std::map<std::string, ArbiterUsage> ReadArbiters(const std::string& dir,
                                                 const std::vector<std::string>& uuids) {
  std::map<std::string, ArbiterUsage> out;
  const uint64_t now = MonotonicNs();
  for (const std::string& uuid : uuids) out[uuid] = ReadOne(dir, uuid, now);
  return out;
}

uint64_t SliceKeyOf(const std::string& region_path) { return shm::SliceKey(region_path.c_str()); }

}  // namespace vgpu::node
