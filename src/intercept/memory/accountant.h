// Accountant: this process's view of the slice's memory accounting.
//
// Charges go to the shared region of the slice when it can be used, otherwise to a region
// private to this process (the limit is then enforced for the process alone). The process claims
// its slot in the region lazily, on its first charge, so that processes that never allocate
// (nvidia-smi) do not appear in the slice.
//
// Nested slices: when the region names a parent region (region.h, set by a `vgpu run` started
// inside another slice), every charge is made in this region and in each region up the chain,
// all or nothing, each under its own limit; the process holds a slot in each. The chain is
// opened at Init(); a parent that cannot be opened refuses every charge (fail closed). Without
// a parent nothing changes on any path.
//
// Thread safety: all methods may be called from any thread. The common path (Charge/Uncharge)
// takes the region's robust mutex once (once per level for a nested slice) and makes no system
// call unless it is contended.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "intercept/config/config.h"
#include "shm/proc_identity.h"
#include "shm/region.h"

namespace vgpu::intercept {

class Accountant {
 public:
  Accountant() = default;
  Accountant(const Accountant&) = delete;
  Accountant& operator=(const Accountant&) = delete;

  // Attaches to the slice region named in `config` (creating it if needed), or to the private
  // fallback region. Logs once why the shared region could not be used.
  void Init(const Config& config);

  // Test seam: use `region` (already initialised), shared or not, with `config`'s limits.
  void InitWithRegion(const Config& config, shm::Region* region, bool shared);
  // Test seam: `parent` (already initialised) becomes the next region up the chain.
  void AddParentForTest(shm::Region* parent);

  // All-or-nothing: charges `bytes` on `device` if the slice stays within its limit.
  bool Charge(int device, uint64_t bytes);
  // Charges as much of `bytes` as fits; returns the amount charged.
  uint64_t ChargeUpTo(int device, uint64_t bytes);
  // Gives back a previous charge (saturating).
  void Uncharge(int device, uint64_t bytes);

  // The limit this process enforces on `device`: min(region limit in force, own config, and the
  // limit of every parent region). A slice resized live (shm/region_resize.h): the region's
  // override replaces the limits file's limit, the environment's own limit still bounds it.
  uint64_t Limit(int device) const;
  bool Sliced(int device) const { return Limit(device) != kNoLimit; }
  // Bytes charged by the whole slice on `device`, after reclaiming dead processes if the last
  // sweep is older than the sweep interval. In a nested slice: Limit() minus the free memory of
  // the fullest level, so that limit - used is what the next allocation can get.
  uint64_t SliceUsed(int device);
  // Bytes charged by this process on `device`.
  uint64_t ProcessUsed(int device) const;
  // This process's own bound on `device` (the limits file and environment, or the
  // environment's alone once the slice's limit was overridden live).
  uint64_t ProcessLimit(int device) const;

  shm::Region* region() const { return region_; }
  bool shared() const { return shared_; }
  // Parent regions, innermost first.
  int parent_count() const { return parent_count_; }
  // The outermost region of the chain (the own region when the slice is not nested).
  shm::Region* outermost_region() const {
    return parent_count_ > 0 ? parents_[parent_count_ - 1].region : region_;
  }
  // The region path that names this process's slice in compute arbitration: the slice's own,
  // or the outermost parent reached through kParentCompute links.
  const char* arbiter_slice_path() const { return arbiter_slice_path_; }
  const shm::ProcIdentity& identity();

  // Claims this process's slot if it has none (telemetry.h counts into it). False on failure.
  bool EnsureSlotForCounters() { return EnsureSlot(); }

  // Records a device UUID for observers.
  void SetDeviceUuid(int device, const char* uuid);

  // At exit: gives back everything this process holds.
  void ReleaseProcess();
  // In the child after fork(): the child holds nothing and has its own identity.
  // Async-signal-safe.
  void ResetInChild();

 private:
  bool EnsureSlot();
  // The slot of this process in parent `i`, claimed on first use; -1 on failure.
  int EnsureParentSlot(int i);
  // Follows the parent links from the slice's region (Init).
  void OpenParents();
  // Gives back `bytes` on `device` in parents [0, count).
  void UnchargeParents(int count, int device, uint64_t bytes);
  // Devices outside the region's range: refused when any limit is set.
  bool OutOfRange(int device) const { return device < 0 || device >= kMaxDevices; }

  // Trivially destructible on purpose (see AllocTable): the shared mapping is never unmapped.
  Config config_;
  shm::Region* region_ = nullptr;
  bool shared_ = false;
  bool any_limit_ = false;
  std::atomic<int> slot_{-1};
  std::atomic<bool> identity_valid_{false};
  shm::ProcIdentity identity_;
  pthread_mutex_t slot_mutex_ = PTHREAD_MUTEX_INITIALIZER;
  struct Parent {
    shm::Region* region = nullptr;
    std::atomic<int> slot{-1};
  };
  Parent parents_[shm::kMaxParents];
  int parent_count_ = 0;
  bool chain_broken_ = false;  // a parent could not be used: every charge is refused
  char arbiter_slice_path_[kPathMax] = {};
};

}  // namespace vgpu::intercept
