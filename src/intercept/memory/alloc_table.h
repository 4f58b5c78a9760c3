// AllocTable: the process's live allocations, so that a free finds what it gives back in O(1).
//
// Open addressing with linear probing and backward-shift deletion (no tombstones, so a steady
// alloc/free churn never rehashes) over an mmap'ed array: no malloc, ever. A key is
// (value, space): a device pointer, a VMM handle, an array, a context or a graph exec, each in
// its own space so that equal handle values of different kinds never collide. The table grows
// (doubling, with a fresh mmap) when half full — the only system call, amortised over thousands
// of inserts; lookups and removals never make one.
//
// Thread safety: all methods are safe to call concurrently (a process-private mutex; contended
// only when two threads allocate at the same instant).
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>

namespace vgpu::intercept {

enum class Space : uint8_t {
  kPointer = 1,    // linear, pitched, managed and stream-ordered device pointers
  kVmm = 2,        // CUmemGenericAllocationHandle from cuMemCreate
  kArray = 3,      // CUarray
  kMipmap = 4,     // CUmipmappedArray
  kContext = 5,    // CUcontext created with cuCtxCreate
  kGraphExec = 6,  // CUgraphExec, one entry per device (see `device`)
};

struct AllocEntry {
  uint64_t key = 0;
  uint64_t size = 0;     // bytes charged for this entry
  uint64_t context = 0;  // CUcontext the allocation belongs to (0 if none)
  int16_t device = -1;
  Space space = Space::kPointer;
  uint8_t state = 0;   // internal: 0 empty, 1 used
  int16_t pool = -1;   // PoolTracker index for stream-ordered allocations, else -1
  uint16_t flags = 0;  // kEntrySpilled
};
static_assert(sizeof(AllocEntry) == 32);
// AllocEntry::flags: served from managed memory by the spill path (spill.h).
inline constexpr uint16_t kEntrySpilled = 1;

class AllocTable {
 public:
  // No destructor on purpose: the library's tables live until the process ends, and hooks may
  // still run on other threads while exit handlers do. Call ResetInChild() to free the memory.
  AllocTable();
  AllocTable(const AllocTable&) = delete;
  AllocTable& operator=(const AllocTable&) = delete;

  // Adds an entry. False only if the table cannot grow (mmap failed); the caller then keeps the
  // charge (safe side: it is never given back).
  bool Insert(const AllocEntry& entry);

  // Removes the entry for (key, space[, device]) and copies it to `out`. False if absent.
  // For kGraphExec the device is part of the key; other spaces ignore `device`.
  bool Remove(uint64_t key, Space space, AllocEntry* out, int device = -1);

  // True if present (copies it to `out` when not null).
  bool Find(uint64_t key, Space space, AllocEntry* out, int device = -1) const;

  // Removes every entry for which pred(entry, arg) is true, passing each to done(entry, arg).
  // `done` runs with the table lock held and must not call back into the table.
  // O(capacity); used when a context is destroyed.
  void RemoveIf(bool (*pred)(const AllocEntry&, void*), void (*done)(const AllocEntry&, void*),
                void* arg);

  size_t size() const;
  size_t capacity() const { return capacity_; }

  // Forgets everything and frees the storage; re-creates the lock. Used in the child after fork()
  // (the child owns no device memory) and by tests. Async-signal-safe (munmap only).
  void ResetInChild();

 private:
  size_t Probe(uint64_t key, Space space, int device) const;  // slot of the key, or capacity_
  size_t Home(const AllocEntry& e) const;                     // where the entry hashes to
  void EraseLocked(size_t i);
  bool GrowLocked();

  mutable pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
  AllocEntry* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;  // live entries
};

}  // namespace vgpu::intercept
