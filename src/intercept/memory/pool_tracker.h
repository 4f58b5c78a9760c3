// PoolTracker: device memory held by stream-ordered memory pools.
//
// A pool takes device memory in chunks (its reserved memory) and hands out allocations from
// them; freed allocations stay reserved until the pool is trimmed. The slice is charged, per
// pool, max(live bytes handed out, reserved bytes):
//   - before an allocation of n bytes, the charge is raised to live + pending + n (all or
//     nothing: beyond the limit the allocation is refused and the driver is not called);
//   - afterwards, and on every free, trim, destroy or memory query, the charge is reconciled
//     with CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: growth is charged as far as the limit allows,
//     shrinkage is given back.
// A destroyed pool is charged its live bytes until they are freed.
//
// Release at synchronization: the driver gives a pool's reserved memory above its release
// threshold (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, default 0) back on the next stream, event or
// context synchronize. The synchronize hooks call OnSynchronize(), which reconciles the pools
// that hold more than their live bytes, so freed memory is uncharged as soon as the driver
// releases it; a pool with a raised threshold keeps what the driver keeps, charged. With no pool
// holding spare memory OnSynchronize() is one relaxed atomic load.
//
// Thread safety: all methods lock a process-private mutex. Lock order: AllocTable, then this,
// then the region.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "intercept/driver_api.h"
#include "intercept/memory/accountant.h"

namespace vgpu::intercept {

class PoolTracker {
 public:
  static constexpr int kMaxPools = 64;

  void Init(Accountant* accountant, const DriverApi* api);

  // Registers `pool` on `device` (device_memory false for host pools, which are not charged).
  // Returns its index, or -1 when the table is full (the caller then charges per allocation).
  int Register(CUmemoryPool pool, int device, bool device_memory);
  // Index of a known pool, or -1.
  int Find(CUmemoryPool pool);
  // Device of a known pool and whether it holds device memory.
  bool Describe(int index, int* device, bool* device_memory);

  // Raises the charge of pool `index` so that an allocation of `bytes` fits. False: over limit.
  bool PrepareAlloc(int index, uint64_t bytes);
  // The allocation succeeded / failed.
  void CommitAlloc(int index, uint64_t bytes);
  void AbortAlloc(int index, uint64_t bytes);
  // An allocation of `bytes` from pool `index` was freed.
  void OnFree(int index, uint64_t bytes);
  // The pool was trimmed (or its attributes changed): reconcile with its reserved memory.
  void Reconcile(int index);
  // Reconciles every pool on `device` (-1: all devices).
  void ReconcileAll(int device);
  // A stream, event or context synchronization returned: reconciles the pools charged for more
  // than their live bytes (the driver may have released that memory).
  void OnSynchronize() {
    if (HasSpare()) ReconcileSpare();
  }
  // Some pool is charged for more than its live bytes.
  bool HasSpare() const { return spare_pools_.load(std::memory_order_relaxed) != 0; }
  // The pool was destroyed.
  void OnDestroy(CUmemoryPool pool);

  // Bytes charged for pool `index` (tests).
  uint64_t Charged(int index);
  // After fork() in the child. Async-signal-safe.
  void ResetInChild();

 private:
  struct Pool {
    CUmemoryPool pool = nullptr;
    int device = -1;
    bool in_use = false;
    bool device_memory = true;
    bool destroyed = false;
    uint64_t live = 0;     // bytes handed out and not freed
    uint64_t pending = 0;  // bytes of allocations in flight
    uint64_t charged = 0;  // bytes charged to the slice
    bool spare = false;    // charged > live + pending (counted in spare_pools_)
  };
  void ReconcileLocked(Pool& p);
  uint64_t Reserved(const Pool& p);
  void ReconcileSpare();
  // REQUIRES mutex_. Updates p.spare and spare_pools_ after p changed.
  void UpdateSpareLocked(Pool& p);
  // REQUIRES mutex_. Frees the table entry.
  void ResetLocked(Pool& p);

  Accountant* accountant_ = nullptr;
  const DriverApi* api_ = nullptr;
  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
  Pool pools_[kMaxPools];
  std::atomic<int> spare_pools_{0};  // pools charged for more than live + pending
};

}  // namespace vgpu::intercept
