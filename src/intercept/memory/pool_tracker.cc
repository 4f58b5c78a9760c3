#include "intercept/memory/pool_tracker.h"

#include <cstring>

namespace vgpu::intercept {
namespace {

class Locker {
 public:
  explicit Locker(pthread_mutex_t* m) : m_(m) { pthread_mutex_lock(m_); }
  ~Locker() { pthread_mutex_unlock(m_); }

 private:
  pthread_mutex_t* m_;
};

uint64_t SatSub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

}  // namespace

void PoolTracker::Init(Accountant* accountant, const DriverApi* api) {
  Locker lock(&mutex_);
  accountant_ = accountant;
  api_ = api;
  for (Pool& p : pools_) p = Pool();
  spare_pools_.store(0, std::memory_order_relaxed);
}

void PoolTracker::UpdateSpareLocked(Pool& p) {
  bool spare = p.in_use && p.device_memory && p.charged > p.live + p.pending;
  if (spare != p.spare) {
    p.spare = spare;
    spare_pools_.fetch_add(spare ? 1 : -1, std::memory_order_relaxed);
  }
}

void PoolTracker::ResetLocked(Pool& p) {
  if (p.spare) spare_pools_.fetch_sub(1, std::memory_order_relaxed);
  p = Pool();
}

int PoolTracker::Register(CUmemoryPool pool, int device, bool device_memory) {
  Locker lock(&mutex_);
  int free_index = -1;
  for (int i = 0; i < kMaxPools; ++i) {
    if (pools_[i].in_use && pools_[i].pool == pool && !pools_[i].destroyed) return i;
    if (!pools_[i].in_use && free_index < 0) free_index = i;
  }
  if (free_index < 0) return -1;
  Pool& p = pools_[free_index];
  ResetLocked(p);
  p.pool = pool;
  p.device = device;
  p.device_memory = device_memory;
  p.in_use = true;
  return free_index;
}

int PoolTracker::Find(CUmemoryPool pool) {
  Locker lock(&mutex_);
  for (int i = 0; i < kMaxPools; ++i) {
    if (pools_[i].in_use && !pools_[i].destroyed && pools_[i].pool == pool) return i;
  }
  return -1;
}

bool PoolTracker::Describe(int index, int* device, bool* device_memory) {
  if (index < 0 || index >= kMaxPools) return false;
  Locker lock(&mutex_);
  const Pool& p = pools_[index];
  if (!p.in_use) return false;
  *device = p.device;
  *device_memory = p.device_memory;
  return true;
}

uint64_t PoolTracker::Reserved(const Pool& p) {
  if (p.destroyed || api_ == nullptr || api_->cuMemPoolGetAttribute == nullptr) return 0;
  cuuint64_t reserved = 0;
  if (api_->cuMemPoolGetAttribute(p.pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) !=
      CUDA_SUCCESS) {
    return 0;
  }
  return reserved;
}

void PoolTracker::ReconcileLocked(Pool& p) {
  if (!p.device_memory) return;
  uint64_t floor = p.live + p.pending;
  uint64_t reserved = Reserved(p);
  uint64_t target = reserved > floor ? reserved : floor;
  if (target > p.charged) {
    // Memory the pool keeps beyond what is handed out: charged as far as the limit allows.
    p.charged += accountant_->ChargeUpTo(p.device, target - p.charged);
  } else if (target < p.charged) {
    accountant_->Uncharge(p.device, p.charged - target);
    p.charged = target;
  }
  UpdateSpareLocked(p);
}

bool PoolTracker::PrepareAlloc(int index, uint64_t bytes) {
  if (index < 0 || index >= kMaxPools) return false;
  Locker lock(&mutex_);
  Pool& p = pools_[index];
  if (!p.in_use) return false;
  if (!p.device_memory) {
    p.pending += bytes;
    return true;
  }
  uint64_t need = p.live + p.pending + bytes;
  if (need > p.charged) {
    if (!accountant_->Charge(p.device, need - p.charged)) {
      // Maybe the pools hold less than we charged for them (released by the driver since):
      // reconcile and retry once.
      for (Pool& other : pools_) {
        if (other.spare || &other == &p) ReconcileLocked(other);
      }
      if (need > p.charged && !accountant_->Charge(p.device, need - p.charged)) return false;
    }
    if (need > p.charged) p.charged = need;
  }
  p.pending += bytes;
  UpdateSpareLocked(p);
  return true;
}

void PoolTracker::CommitAlloc(int index, uint64_t bytes) {
  if (index < 0 || index >= kMaxPools) return;
  Locker lock(&mutex_);
  Pool& p = pools_[index];
  p.pending = SatSub(p.pending, bytes);
  p.live += bytes;
  ReconcileLocked(p);
}

void PoolTracker::AbortAlloc(int index, uint64_t bytes) {
  if (index < 0 || index >= kMaxPools) return;
  Locker lock(&mutex_);
  Pool& p = pools_[index];
  p.pending = SatSub(p.pending, bytes);
  ReconcileLocked(p);
}

void PoolTracker::OnFree(int index, uint64_t bytes) {
  if (index < 0 || index >= kMaxPools) return;
  Locker lock(&mutex_);
  Pool& p = pools_[index];
  if (!p.in_use) return;
  p.live = SatSub(p.live, bytes);
  ReconcileLocked(p);
  if (p.destroyed && p.live == 0 && p.pending == 0) {
    accountant_->Uncharge(p.device, p.charged);
    ResetLocked(p);
  }
}

void PoolTracker::Reconcile(int index) {
  if (index < 0 || index >= kMaxPools) return;
  Locker lock(&mutex_);
  if (pools_[index].in_use) ReconcileLocked(pools_[index]);
}

void PoolTracker::ReconcileAll(int device) {
  Locker lock(&mutex_);
  for (Pool& p : pools_) {
    if (p.in_use && (device < 0 || p.device == device)) ReconcileLocked(p);
  }
}

void PoolTracker::OnDestroy(CUmemoryPool pool) {
  Locker lock(&mutex_);
  for (Pool& p : pools_) {
    if (!p.in_use || p.destroyed || p.pool != pool) continue;
    p.destroyed = true;
    ReconcileLocked(p);  // down to the live bytes
    if (p.live == 0 && p.pending == 0) {
      accountant_->Uncharge(p.device, p.charged);
      ResetLocked(p);
    }
  }
}

void PoolTracker::ReconcileSpare() {
  Locker lock(&mutex_);
  for (Pool& p : pools_) {
    if (p.spare) ReconcileLocked(p);
  }
}

uint64_t PoolTracker::Charged(int index) {
  if (index < 0 || index >= kMaxPools) return 0;
  Locker lock(&mutex_);
  return pools_[index].charged;
}

void PoolTracker::ResetInChild() {
  for (Pool& p : pools_) p = Pool();
  spare_pools_.store(0, std::memory_order_relaxed);
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  std::memcpy(&mutex_, &fresh, sizeof(fresh));
}

}  // namespace vgpu::intercept
