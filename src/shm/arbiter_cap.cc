#include "shm/arbiter_cap.h"

#include "shm/arbiter_internal.h"
#include "shm/arbiter_policy.h"

namespace vgpu::shm {

RegionError CapArbiterSlice(Arbiter* a, uint64_t key, uint32_t max_pct, const ProcIdentity& self,
                            uint32_t* previous) {
  if (key == 0 || max_pct < 1 || max_pct > 100) return RegionError::kCorrupt;
  ArbiterLock lock(a, self, 2000);
  if (!lock.held()) return lock.status();
  for (int i = 0; i < kMaxArbiterSlices; ++i) {
    ArbiterSlice& s = a->slices[i];
    if (s.key != key) continue;
    *previous = s.config.max_pct;
    s.config.max_pct = max_pct;
    if (s.config.mode == kModeCapped) s.config.guarantee_pct = max_pct < 100 ? max_pct : 0;
    if (s.config.guarantee_pct > max_pct) s.config.guarantee_pct = max_pct;
    internal::BumpGenerationLocked(a);
    return RegionError::kOk;
  }
  return RegionError::kNotReady;
}

RegionError SetArbiterSliceLevel(Arbiter* a, uint64_t key, int32_t level, const ProcIdentity& self,
                                 int32_t* previous) {
  if (key == 0 || level < kPriorityRealtime || level > kPriorityIdle) return RegionError::kCorrupt;
  ArbiterLock lock(a, self, 2000);
  if (!lock.held()) return lock.status();
  for (int i = 0; i < kMaxArbiterSlices; ++i) {
    ArbiterSlice& s = a->slices[i];
    if (s.key != key) continue;
    *previous = s.config.level;
    s.config.level = level;
    internal::BumpGenerationLocked(a);
    return RegionError::kOk;
  }
  return RegionError::kNotReady;
}

}  // namespace vgpu::shm
