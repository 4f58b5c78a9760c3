#include "intercept/memory/accountant.h"

#include <unistd.h>

#include <cstring>

#include "common/log.h"
#include "intercept/gate/tenant_control.h"
#include "intercept/telemetry.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"
#include "shm/region_resize.h"

namespace vgpu::intercept {
namespace {

// The private fallback region: in .bss, touched only when used.
shm::Region g_private_region;

shm::RegionConfig RegionConfigFrom(const Config& config) {
  shm::RegionConfig rc{};
  rc.device_count = config.device_count;
  rc.priority = config.priority;
  for (int d = 0; d < kMaxDevices; ++d) {
    rc.memory_limit[d] = config.region_limit[d];
    rc.sm_limit[d] = config.sm_limit[d];
  }
  return rc;
}

void CopyPath(const char* from, char* to, size_t size) {
  size_t n = strnlen(from, size - 1);
  std::memcpy(to, from, n);
  to[n] = '\0';
}

}  // namespace

void Accountant::Init(const Config& config) {
  config_ = config;
  any_limit_ = config.any_memory_limit;
  CopyPath(config.region_path, arbiter_slice_path_, sizeof(arbiter_slice_path_));
  parent_count_ = 0;
  chain_broken_ = false;
  if (config.region_path[0] != '\0') {
    shm::Mapping mapping;
    shm::RegionError e =
        shm::Mapping::OpenOrCreate(config.region_path, RegionConfigFrom(config), &mapping);
    if (e == shm::RegionError::kOk) {
      region_ = mapping.Detach();
      shared_ = true;
      OpenParents();
      return;
    }
    VGPU_LOG_WARN(
        "cannot use the slice region %s (%s%s%s); limits are enforced for this process "
        "alone",
        config.region_path, shm::RegionErrorText(e), e == shm::RegionError::kIo ? ": " : "",
        e == shm::RegionError::kIo ? std::strerror(mapping.saved_errno()) : "");
  }
  shm::InitializeRegion(&g_private_region, RegionConfigFrom(config), false);
  region_ = &g_private_region;
  shared_ = false;
}

void Accountant::OpenParents() {
  const shm::Region* current = region_;
  bool compute_follows = true;
  for (int level = 0;; ++level) {
    const shm::RegionHeader& h = current->header;
    if (h.minor < 2 || h.parent[0] == '\0') return;
    char path[shm::kRegionPathMax];
    CopyPath(h.parent, path, sizeof(path));
    const uint32_t flags = h.parent_flags;
    if (level == shm::kMaxParents) {
      VGPU_LOG_ERROR(
          "the slice is nested more than %d levels deep; device memory allocations are "
          "refused",
          shm::kMaxParents);
      chain_broken_ = true;
      return;
    }
    shm::Mapping mapping;
    shm::RegionError e = shm::Mapping::OpenExisting(path, true, &mapping);
    if (e != shm::RegionError::kOk) {
      VGPU_LOG_ERROR(
          "cannot use the region %s of the slice this one is nested in (%s%s%s); device memory "
          "allocations are refused",
          path, shm::RegionErrorText(e), e == shm::RegionError::kIo ? ": " : "",
          e == shm::RegionError::kIo ? std::strerror(mapping.saved_errno()) : "");
      chain_broken_ = true;
      return;
    }
    parents_[level].region = mapping.Detach();
    parents_[level].slot.store(-1, std::memory_order_relaxed);
    parent_count_ = level + 1;
    compute_follows = compute_follows && (flags & shm::kParentCompute) != 0;
    if (compute_follows) CopyPath(path, arbiter_slice_path_, sizeof(arbiter_slice_path_));
    current = parents_[level].region;
  }
}

void Accountant::AddParentForTest(shm::Region* parent) {
  parents_[parent_count_].region = parent;
  parents_[parent_count_].slot.store(-1);
  ++parent_count_;
}

int Accountant::EnsureParentSlot(int i) {
  int slot = parents_[i].slot.load(std::memory_order_acquire);
  if (slot >= 0) return slot;
  const shm::ProcIdentity& self = identity();
  pthread_mutex_lock(&slot_mutex_);
  slot = parents_[i].slot.load(std::memory_order_relaxed);
  if (slot < 0) {
    shm::RegionError e = shm::ClaimSlot(parents_[i].region, self, &slot);
    if (e == shm::RegionError::kOk) {
      parents_[i].slot.store(slot, std::memory_order_release);
    } else {
      VGPU_LOG_ERROR(
          "cannot join the accounting of the outer slice (%s); this device memory allocation is "
          "refused, the next one tries to join again",
          shm::RegionErrorText(e));
      slot = -1;
    }
  }
  pthread_mutex_unlock(&slot_mutex_);
  return slot;
}

void Accountant::UnchargeParents(int count, int device, uint64_t bytes) {
  for (int i = 0; i < count; ++i) {
    int slot = parents_[i].slot.load(std::memory_order_acquire);
    if (slot >= 0) shm::Uncharge(parents_[i].region, slot, device, bytes, identity_);
  }
}

void Accountant::InitWithRegion(const Config& config, shm::Region* region, bool shared) {
  config_ = config;
  any_limit_ = config.any_memory_limit;
  CopyPath(config.region_path, arbiter_slice_path_, sizeof(arbiter_slice_path_));
  parent_count_ = 0;
  chain_broken_ = false;
  if (region == nullptr) {
    shm::InitializeRegion(&g_private_region, RegionConfigFrom(config), false);
    region = &g_private_region;
    shared = false;
  }
  region_ = region;
  shared_ = shared;
  slot_.store(-1);
  ResetCounters();
  identity_valid_.store(false);
}

const shm::ProcIdentity& Accountant::identity() {
  if (!identity_valid_.load(std::memory_order_acquire)) {
    pthread_mutex_lock(&slot_mutex_);
    if (!identity_valid_.load(std::memory_order_relaxed)) {
      identity_ = shm::CurrentProcIdentity();
      identity_valid_.store(true, std::memory_order_release);
    }
    pthread_mutex_unlock(&slot_mutex_);
  }
  return identity_;
}

bool Accountant::EnsureSlot() {
  if (slot_.load(std::memory_order_acquire) >= 0) return true;
  const shm::ProcIdentity& self = identity();
  pthread_mutex_lock(&slot_mutex_);
  bool ok = slot_.load(std::memory_order_relaxed) >= 0;
  if (!ok && region_ != nullptr) {
    int slot = -1;
    shm::RegionError e = shm::ClaimSlot(region_, self, &slot);
    if (e == shm::RegionError::kOk) {
      slot_.store(slot, std::memory_order_release);
      PublishCounters(region_, slot);
      ok = true;
    } else {
      VGPU_LOG_ERROR(
          "cannot join the slice accounting (%s); this device memory allocation is refused, the "
          "next one tries to join again",
          shm::RegionErrorText(e));
    }
  }
  pthread_mutex_unlock(&slot_mutex_);
  return ok;
}

bool Accountant::Charge(int device, uint64_t bytes) {
  if (OutOfRange(device)) return !any_limit_;
  if (bytes == 0) return true;
  if (chain_broken_ || !EnsureSlot()) return false;
  const int slot = slot_.load(std::memory_order_relaxed);
  shm::RegionError e = shm::Charge(region_, slot, device, bytes, ProcessLimit(device), identity_);
  if (e != shm::RegionError::kOk) {
    if (e != shm::RegionError::kOverLimit) {
      VGPU_LOG_ERROR("slice accounting failed (%s); allocation refused", shm::RegionErrorText(e));
    } else {
      CountOomRefusal();
    }
    return false;
  }
  // A nested slice: the same charge in every outer slice, each under its own limit.
  for (int i = 0; i < parent_count_; ++i) {
    int parent_slot = EnsureParentSlot(i);
    if (parent_slot < 0 || shm::Charge(parents_[i].region, parent_slot, device, bytes, kNoLimit,
                                       identity_) != shm::RegionError::kOk) {
      UnchargeParents(i, device, bytes);
      shm::Uncharge(region_, slot, device, bytes, identity_);
      return false;
    }
  }
  return true;
}

uint64_t Accountant::ChargeUpTo(int device, uint64_t bytes) {
  if (OutOfRange(device)) return any_limit_ ? 0 : bytes;
  if (bytes == 0 || chain_broken_ || !EnsureSlot()) return 0;
  const int slot = slot_.load(std::memory_order_relaxed);
  uint64_t got = shm::ChargeUpTo(region_, slot, device, bytes, ProcessLimit(device), identity_);
  for (int i = 0; i < parent_count_ && got > 0; ++i) {
    int parent_slot = EnsureParentSlot(i);
    uint64_t fits = parent_slot < 0 ? 0
                                    : shm::ChargeUpTo(parents_[i].region, parent_slot, device, got,
                                                      kNoLimit, identity_);
    if (fits < got) {
      // The outer slice has less room: give the difference back at the inner levels.
      UnchargeParents(i, device, got - fits);
      shm::Uncharge(region_, slot, device, got - fits, identity_);
      got = fits;
    }
  }
  return got;
}

void Accountant::Uncharge(int device, uint64_t bytes) {
  int slot = slot_.load(std::memory_order_acquire);
  if (OutOfRange(device) || slot < 0 || bytes == 0) return;
  shm::Uncharge(region_, slot, device, bytes, identity_);
  UnchargeParents(parent_count_, device, bytes);
}

uint64_t Accountant::ProcessLimit(int device) const {
  // A resized slice: the override replaces the limits file's limit; the environment may still
  // lower it.
  if (region_ != nullptr && shm::HasMemoryOverride(region_, device)) {
    return config_.env_limit[device];
  }
  return config_.memory_limit[device];
}

uint64_t Accountant::Limit(int device) const {
  if (OutOfRange(device)) return any_limit_ ? 0 : kNoLimit;
  uint64_t limit = ProcessLimit(device);
  uint64_t shared = region_ != nullptr ? shm::ConfigLimit(region_, device) : kNoLimit;
  if (shared < limit) limit = shared;
  for (int i = 0; i < parent_count_; ++i) {
    uint64_t outer = shm::ConfigLimit(parents_[i].region, device);
    if (outer < limit) limit = outer;
  }
  return limit;
}

uint64_t Accountant::SliceUsed(int device) {
  if (region_ == nullptr || OutOfRange(device)) return 0;
  if (shared_) shm::MaybeSweep(region_, identity());
  uint64_t used = shm::DeviceUsed(region_, device);
  if (parent_count_ == 0) return used;
  const uint64_t limit = Limit(device);
  if (limit == kNoLimit) return used;
  auto room = [](uint64_t level_limit, uint64_t level_used) {
    return level_limit > level_used ? level_limit - level_used : 0;
  };
  uint64_t own = ProcessLimit(device);
  uint64_t shared = shm::ConfigLimit(region_, device);
  uint64_t free = room(own < shared ? own : shared, used);
  for (int i = 0; i < parent_count_; ++i) {
    shm::MaybeSweep(parents_[i].region, identity());
    uint64_t outer_free = room(shm::ConfigLimit(parents_[i].region, device),
                               shm::DeviceUsed(parents_[i].region, device));
    if (outer_free < free) free = outer_free;
  }
  return limit > free ? limit - free : 0;
}

uint64_t Accountant::ProcessUsed(int device) const {
  int slot = slot_.load(std::memory_order_acquire);
  if (region_ == nullptr || slot < 0) return 0;
  return shm::SlotUsed(region_, slot, device);
}

void Accountant::SetDeviceUuid(int device, const char* uuid) {
  if (region_ != nullptr) shm::SetDeviceUuid(region_, device, uuid, identity());
}

void Accountant::ReleaseProcess() {
  // Counts after this point (other threads at exit) go to the slice's totals.
  if (region_ != nullptr) PublishCounters(region_, -1);
  int slot = slot_.exchange(-1);
  if (slot >= 0 && region_ != nullptr) shm::ReleaseSlot(region_, slot, identity_);
  for (int i = 0; i < parent_count_; ++i) {
    int parent_slot = parents_[i].slot.exchange(-1);
    if (parent_slot >= 0) shm::ReleaseSlot(parents_[i].region, parent_slot, identity_);
  }
}

void Accountant::ResetInChild() {
  slot_.store(-1, std::memory_order_relaxed);
  ResetCounters();
  for (Parent& p : parents_) p.slot.store(-1, std::memory_order_relaxed);
  identity_valid_.store(false, std::memory_order_relaxed);
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  std::memcpy(&slot_mutex_, &fresh, sizeof(fresh));
  if (!shared_ && region_ != nullptr) {
    // The private region was copied with the parent's charges: start empty.
    shm::RegionConfig rc = region_->header.config;
    shm::InitializeRegion(region_, rc, false);
  }
}

}  // namespace vgpu::intercept
