#include "shm/region.h"

#include <time.h>
#include <unistd.h>

#include <cstring>

#include "shm/robust_mutex.h"

namespace vgpu::shm {

const char* RegionErrorText(RegionError error) {
  switch (error) {
    case RegionError::kOk:
      return "ok";
    case RegionError::kIo:
      return "cannot open or map the region file";
    case RegionError::kTooSmall:
      return "file is too small to be a vgpu region";
    case RegionError::kBadMagic:
      return "not a vgpu region (bad magic)";
    case RegionError::kForeignVersion:
      return "region has another major version";
    case RegionError::kBadSize:
      return "region size does not match this build";
    case RegionError::kCorrupt:
      return "region is corrupted";
    case RegionError::kNotReady:
      return "region was never fully initialised";
    case RegionError::kLockTimeout:
      return "timed out waiting for the region lock";
    case RegionError::kLockBroken:
      return "region lock is unrecoverable";
    case RegionError::kNoSlot:
      return "no free process slot in the region";
    case RegionError::kOverLimit:
      return "over the memory limit";
  }
  return "unknown region error";
}

uint64_t ConfigChecksum(const RegionConfig& config) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&config);
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < sizeof(config); ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

uint64_t ParentChecksum(const RegionHeader& header) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  auto mix = [&hash](const void* data, size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      hash ^= bytes[i];
      hash *= 0x100000001b3ULL;
    }
  };
  mix(header.parent, sizeof(header.parent));
  mix(&header.parent_flags, sizeof(header.parent_flags));
  return hash;
}

bool SetRegionParent(Region* region, const char* parent, uint32_t flags) {
  size_t n = std::strlen(parent);
  if (n >= static_cast<size_t>(kRegionPathMax)) return false;
  RegionHeader& h = region->header;
  std::memset(h.parent, 0, sizeof(h.parent));
  std::memcpy(h.parent, parent, n);
  h.parent_flags = flags;
  h.parent_checksum = ParentChecksum(h);
  return true;
}

RegionError ValidateRegion(const Region* region, size_t size) {
  if (region == nullptr || size < 16) return RegionError::kTooSmall;
  const RegionHeader& h = region->header;
  if (h.magic != kRegionMagic) return RegionError::kBadMagic;
  if (h.major != kRegionMajor) return RegionError::kForeignVersion;
  if (size < sizeof(Region)) return RegionError::kTooSmall;
  if (h.region_size != sizeof(Region) || h.max_procs != static_cast<uint32_t>(kMaxProcs)) {
    return RegionError::kBadSize;
  }
  uint32_t state =
      std::atomic_ref<uint32_t>(const_cast<uint32_t&>(h.state)).load(std::memory_order_acquire);
  if (state != kStateReady) return RegionError::kNotReady;
  if (ConfigChecksum(h.config) != h.config_checksum) return RegionError::kCorrupt;
  if (h.config.device_count == 0 || h.config.device_count > static_cast<uint32_t>(kMaxDevices)) {
    return RegionError::kCorrupt;
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    if (h.config.sm_limit[d] > 100) return RegionError::kCorrupt;
  }
  // Minor 2: the parent link. A region of an older minor has zeros there (no parent).
  if (h.minor >= 2) {
    if (ParentChecksum(h) != h.parent_checksum) return RegionError::kCorrupt;
    if (h.parent[kRegionPathMax - 1] != '\0') return RegionError::kCorrupt;
  }
  return RegionError::kOk;
}

void InitializeRegion(Region* region, const RegionConfig& config, bool process_shared) {
  RegionHeader& h = region->header;
  std::atomic_ref<uint32_t>(h.state).store(kStateInitializing, std::memory_order_release);
  // Everything after the state word: zero, then fill.
  std::memset(reinterpret_cast<char*>(&h) + offsetof(RegionHeader, creator_pid), 0,
              sizeof(Region) - offsetof(RegionHeader, creator_pid));
  h.magic = kRegionMagic;
  h.major = kRegionMajor;
  h.minor = kRegionMinor;
  h.region_size = sizeof(Region);
  h.max_procs = kMaxProcs;
  h.creator_pid = static_cast<int32_t>(::getpid());
  struct timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  h.created_unix_ns =
      static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
  h.config = config;
  h.config_checksum = ConfigChecksum(h.config);
  h.parent_checksum = ParentChecksum(h);
  InitRobustMutex(&h.mutex.mutex, process_shared);
  std::atomic_ref<uint32_t>(h.state).store(kStateReady, std::memory_order_release);
}

}  // namespace vgpu::shm
