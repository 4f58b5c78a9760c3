#include "shm/region_resize.h"

#include <time.h>

#include <atomic>
#include <cstring>

#include "shm/region_ops.h"

namespace vgpu::shm {
namespace {

template <typename T>
T Relaxed(const T& field) {
  return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_relaxed);
}
template <typename T>
void SetRelaxed(T& field, T value) {
  std::atomic_ref<T>(field).store(value, std::memory_order_relaxed);
}

uint64_t Fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

uint64_t WallNowNs() {
  struct timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t ResizeChecksum(const ResizeControl& c) {
  uint64_t h = 14695981039346656037ULL;
  h = Fnv(h, &c.seq, sizeof c.seq);
  h = Fnv(h, c.memory_limit, sizeof c.memory_limit);
  h = Fnv(h, c.sm_limit, sizeof c.sm_limit);
  h = Fnv(h, &c.priority, sizeof c.priority);
  return h;
}

bool ReadResize(const Region* region, ResizeControl* out) {
  const ResizeControl& c = region->header.resize;
  for (int attempt = 0; attempt < 16; ++attempt) {
    uint64_t s1 =
        std::atomic_ref<uint64_t>(const_cast<uint64_t&>(c.seq)).load(std::memory_order_acquire);
    if (s1 == 0) break;
    if (s1 & 1) continue;  // a writer is inside (it holds the mutex for microseconds)
    std::memset(out, 0, sizeof *out);
    out->seq = s1;
    out->updated_unix_ns = Relaxed(c.updated_unix_ns);
    for (int d = 0; d < kMaxDevices; ++d) {
      out->memory_limit[d] = Relaxed(c.memory_limit[d]);
      out->sm_limit[d] = Relaxed(c.sm_limit[d]);
    }
    out->checksum = Relaxed(c.checksum);
    out->resizes = Relaxed(c.resizes);
    out->priority = Relaxed(c.priority);
    std::atomic_thread_fence(std::memory_order_acquire);
    uint64_t s2 = Relaxed(c.seq);
    if (s1 == s2 && out->checksum == ResizeChecksum(*out)) return true;
  }
  std::memset(out, 0, sizeof *out);
  return false;
}

uint64_t MemoryLimitInForce(const Region* region, int device) {
  if (device < 0 || device >= kMaxDevices) return kNoLimit;
  uint64_t config = region->header.config.memory_limit[device];
  if (ResizeSeq(region) == 0) return config;
  ResizeControl c;
  if (!ReadResize(region, &c) || c.memory_limit[device] == 0) return config;
  return c.memory_limit[device];
}

bool HasMemoryOverride(const Region* region, int device) {
  if (device < 0 || device >= kMaxDevices || ResizeSeq(region) == 0) return false;
  ResizeControl c;
  return ReadResize(region, &c) && c.memory_limit[device] != 0;
}

uint32_t SmLimitInForce(const Region* region, int device) {
  if (device < 0 || device >= kMaxDevices) return 0;
  uint32_t config = region->header.config.sm_limit[device];
  if (ResizeSeq(region) == 0) return config;
  ResizeControl c;
  if (!ReadResize(region, &c) || c.sm_limit[device] == 0) return config;
  return c.sm_limit[device] >= 100 ? 0 : c.sm_limit[device];
}

int32_t PriorityInForce(const Region* region) {
  int32_t config = region->header.config.priority;
  if (ResizeSeq(region) == 0) return config;
  ResizeControl c;
  if (!ReadResize(region, &c) || c.priority == 0) return config;
  return static_cast<int32_t>(c.priority) - 1;
}

RegionError ResizeRegion(Region* region, const ResizeRequest& request, const ProcIdentity& self,
                         ResizeRefusal* refusal) {
  RegionHeader& h = region->header;
  const int devices = static_cast<int>(h.config.device_count);
  if (request.priority < -1 || request.priority > 4) return RegionError::kCorrupt;
  for (int d = 0; d < kMaxDevices; ++d) {
    if (request.sm_limit[d] > 100) return RegionError::kCorrupt;
    if (d >= devices && (request.sm_limit[d] != 0 || request.memory_limit[d] != 0)) {
      return RegionError::kCorrupt;
    }
  }
  RegionLock lock(region, self, kDefaultLockTimeoutMs);
  if (!lock.held()) return lock.status();
  ResizeControl next;
  ReadResize(region, &next);  // under the mutex: consistent, or zero when corrupted
  for (int d = 0; d < devices; ++d) {
    uint64_t asked = request.memory_limit[d];
    if (asked == 0) continue;
    uint64_t used = h.device_used[d];
    if (asked != kNoLimit && used > asked) {
      if (refusal != nullptr) *refusal = ResizeRefusal{d, used, asked};
      return RegionError::kOverLimit;
    }
    next.memory_limit[d] = asked;
  }
  for (int d = 0; d < devices; ++d) {
    if (request.sm_limit[d] != 0) next.sm_limit[d] = request.sm_limit[d];
  }
  if (request.priority >= 0) next.priority = static_cast<uint32_t>(request.priority) + 1;
  ResizeControl& c = h.resize;
  const uint64_t seq = (Relaxed(c.seq) | 1) + 1;  // next even number
  std::atomic_ref<uint64_t>(c.seq).store(seq - 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (int d = 0; d < kMaxDevices; ++d) {
    SetRelaxed(c.memory_limit[d], next.memory_limit[d]);
    SetRelaxed(c.sm_limit[d], next.sm_limit[d]);
  }
  SetRelaxed(c.priority, next.priority);
  SetRelaxed(c.updated_unix_ns, WallNowNs());
  SetRelaxed(c.resizes, Relaxed(c.resizes) + 1);
  next.seq = seq;
  SetRelaxed(c.checksum, ResizeChecksum(next));
  std::atomic_ref<uint64_t>(c.seq).store(seq, std::memory_order_release);
  return RegionError::kOk;
}

void RepairResizeLocked(Region* region) {
  ResizeControl& c = region->header.resize;
  uint64_t seq = Relaxed(c.seq);
  if ((seq & 1) == 0) return;
  ResizeControl cleared{};
  cleared.seq = seq + 1;
  for (int d = 0; d < kMaxDevices; ++d) {
    SetRelaxed(c.memory_limit[d], uint64_t{0});
    SetRelaxed(c.sm_limit[d], uint32_t{0});
  }
  SetRelaxed(c.priority, uint32_t{0});
  SetRelaxed(c.checksum, ResizeChecksum(cleared));
  std::atomic_ref<uint64_t>(c.seq).store(seq + 1, std::memory_order_release);
}

}  // namespace vgpu::shm
