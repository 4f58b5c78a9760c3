#include "shm/arbiter.h"

#include <time.h>
#include <unistd.h>

#include <cstring>

#include "shm/robust_mutex.h"

namespace vgpu::shm {

bool ValidSliceConfig(const ArbiterSliceConfig& c) {
  return c.max_pct >= 1 && c.max_pct <= 100 && c.guarantee_pct <= c.max_pct && c.weight >= 1 &&
         c.weight <= kMaxWeight && c.level >= 0 && c.level < kPriorityLevels &&
         (c.mode == kModeCapped || c.mode == kModeElastic) && c.time_slice_ns >= kMinTimeSliceNs &&
         c.time_slice_ns <= kMaxTimeSliceNs && c.latency_slack_us <= kMaxLatencySlackUs;
}

RegionError ValidateArbiter(const Arbiter* arbiter, size_t size) {
  if (arbiter == nullptr || size < 16) return RegionError::kTooSmall;
  const ArbiterHeader& h = arbiter->header;
  if (h.magic != kArbiterMagic) return RegionError::kBadMagic;
  if (h.major != kArbiterMajor) return RegionError::kForeignVersion;
  if (size < sizeof(Arbiter)) return RegionError::kTooSmall;
  if (h.region_size != sizeof(Arbiter) ||
      h.max_slices != static_cast<uint32_t>(kMaxArbiterSlices) ||
      h.max_procs != static_cast<uint32_t>(kMaxArbiterProcs)) {
    return RegionError::kBadSize;
  }
  uint32_t state =
      std::atomic_ref<uint32_t>(const_cast<uint32_t&>(h.state)).load(std::memory_order_acquire);
  if (state != kStateReady) return RegionError::kNotReady;
  int32_t owner = LoadI32(h.owner);
  if (owner < -1 || owner >= kMaxArbiterSlices) return RegionError::kCorrupt;
  return RegionError::kOk;
}

void InitializeArbiter(Arbiter* arbiter, const char* uuid, bool process_shared) {
  ArbiterHeader& h = arbiter->header;
  std::atomic_ref<uint32_t>(h.state).store(kStateInitializing, std::memory_order_release);
  std::memset(reinterpret_cast<char*>(&h) + offsetof(ArbiterHeader, creator_pid), 0,
              sizeof(Arbiter) - offsetof(ArbiterHeader, creator_pid));
  h.magic = kArbiterMagic;
  h.major = kArbiterMajor;
  h.minor = kArbiterMinor;
  h.region_size = sizeof(Arbiter);
  h.max_slices = kMaxArbiterSlices;
  h.max_procs = kMaxArbiterProcs;
  h.creator_pid = static_cast<int32_t>(::getpid());
  struct timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  h.created_unix_ns =
      static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
  if (uuid != nullptr) {
    size_t n = std::strlen(uuid);
    if (n >= static_cast<size_t>(kUuidLength)) n = kUuidLength - 1;
    std::memcpy(h.uuid, uuid, n);
  }
  h.owner = -1;
  h.last_proc = -1;
  h.next_seq = 1;
  InitRobustMutex(&h.mutex.mutex, process_shared);
  std::atomic_ref<uint32_t>(h.state).store(kStateReady, std::memory_order_release);
}

uint64_t SliceUsageInWindow(const ArbiterSlice& slice, uint64_t now_ns, uint64_t window_ns) {
  uint64_t last = now_ns / kUsageBucketNs;  // the current (partial) bucket is not counted
  uint64_t count = window_ns / kUsageBucketNs;
  if (count > static_cast<uint64_t>(kUsageBuckets - 1)) count = kUsageBuckets - 1;
  uint64_t total = 0;
  for (uint64_t i = 1; i <= count && i <= last; ++i) {
    uint64_t index = last - i;
    const UsageBucket& b = slice.usage[index % kUsageBuckets];
    if (LoadU64(b.index) == index) total += LoadU64(b.ns);
  }
  return total;
}

}  // namespace vgpu::shm
