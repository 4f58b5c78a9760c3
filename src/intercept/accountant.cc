#include "intercept/accountant.h"

#include <unistd.h>

#include <cstring>

#include "common/log.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"

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

}  // namespace

void Accountant::Init(const Config& config) {
  config_ = config;
  any_limit_ = config.any_memory_limit;
  if (config.region_path[0] != '\0') {
    shm::Mapping mapping;
    shm::RegionError e =
        shm::Mapping::OpenOrCreate(config.region_path, RegionConfigFrom(config), &mapping);
    if (e == shm::RegionError::kOk) {
      region_ = mapping.Detach();
      shared_ = true;
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

void Accountant::InitWithRegion(const Config& config, shm::Region* region, bool shared) {
  config_ = config;
  any_limit_ = config.any_memory_limit;
  if (region == nullptr) {
    shm::InitializeRegion(&g_private_region, RegionConfigFrom(config), false);
    region = &g_private_region;
    shared = false;
  }
  region_ = region;
  shared_ = shared;
  slot_.store(-1);
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
      ok = true;
    } else {
      VGPU_LOG_ERROR("cannot join the slice accounting (%s); device memory allocations are refused",
                     shm::RegionErrorText(e));
    }
  }
  pthread_mutex_unlock(&slot_mutex_);
  return ok;
}

bool Accountant::Charge(int device, uint64_t bytes) {
  if (OutOfRange(device)) return !any_limit_;
  if (bytes == 0) return true;
  if (!EnsureSlot()) return false;
  shm::RegionError e = shm::Charge(region_, slot_.load(std::memory_order_relaxed), device, bytes,
                                   config_.memory_limit[device], identity_);
  if (e == shm::RegionError::kOk) return true;
  if (e != shm::RegionError::kOverLimit) {
    VGPU_LOG_ERROR("slice accounting failed (%s); allocation refused", shm::RegionErrorText(e));
  }
  return false;
}

uint64_t Accountant::ChargeUpTo(int device, uint64_t bytes) {
  if (OutOfRange(device)) return any_limit_ ? 0 : bytes;
  if (bytes == 0 || !EnsureSlot()) return 0;
  return shm::ChargeUpTo(region_, slot_.load(std::memory_order_relaxed), device, bytes,
                         config_.memory_limit[device], identity_);
}

void Accountant::Uncharge(int device, uint64_t bytes) {
  int slot = slot_.load(std::memory_order_acquire);
  if (OutOfRange(device) || slot < 0 || bytes == 0) return;
  shm::Uncharge(region_, slot, device, bytes, identity_);
}

uint64_t Accountant::Limit(int device) const {
  if (OutOfRange(device)) return any_limit_ ? 0 : kNoLimit;
  uint64_t own = config_.memory_limit[device];
  uint64_t shared = region_ != nullptr ? shm::ConfigLimit(region_, device) : kNoLimit;
  return own < shared ? own : shared;
}

uint64_t Accountant::SliceUsed(int device) {
  if (region_ == nullptr || OutOfRange(device)) return 0;
  if (shared_) shm::MaybeSweep(region_, identity());
  return shm::DeviceUsed(region_, device);
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
  int slot = slot_.exchange(-1);
  if (slot >= 0 && region_ != nullptr) shm::ReleaseSlot(region_, slot, identity_);
}

void Accountant::ResetInChild() {
  slot_.store(-1, std::memory_order_relaxed);
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
