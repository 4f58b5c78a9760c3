#include "device/injecting_backend.h"

#include <algorithm>
#include <chrono>

namespace vgpu::device {

InjectingBackend::InjectingBackend(std::unique_ptr<DeviceBackend> inner)
    : inner_(std::move(inner)) {}

void InjectingBackend::InjectEvent(HealthEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

void InjectingBackend::SetLost(const std::string& uuid, bool lost) {
  std::lock_guard<std::mutex> lock(mu_);
  if (lost) {
    lost_.insert(uuid);
  } else {
    lost_.erase(uuid);
  }
}

std::string InjectingBackend::Describe() const {
  return inner_->Describe() + " with fault injection";
}

Result<std::vector<DeviceInfo>> InjectingBackend::Discover() {
  auto devices = inner_->Discover();
  if (devices.has_value()) {
    std::lock_guard<std::mutex> lock(mu_);
    uuids_.clear();
    for (const DeviceInfo& d : *devices) uuids_.push_back(d.uuid);
  }
  return devices;
}

Result<DeviceSample> InjectingBackend::Sample(int index) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index >= 0 && index < static_cast<int>(uuids_.size()) && lost_.count(uuids_[index])) {
      return Status::Unavailable("GPU " + uuids_[index] + " does not answer (injected)");
    }
  }
  return inner_->Sample(index);
}

std::vector<HealthEvent> InjectingBackend::WaitForEvents(int timeout_ms) {
  std::vector<HealthEvent> out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const bool inner_events = inner_->SupportsEvents();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!inner_events) {
        cv_.wait_until(lock, deadline, [&] { return !events_.empty(); });
      }
      out.insert(out.end(), events_.begin(), events_.end());
      events_.clear();
    }
    if (!out.empty()) return out;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return out;
    if (inner_events) {
      out = inner_->WaitForEvents(static_cast<int>(std::min<long long>(left, 100)));
      if (!out.empty()) return out;
    }
  }
}

Status InjectingBackend::Reset(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int>(uuids_.size())) {
    return Status::InvalidArgument("no GPU " + std::to_string(index));
  }
  lost_.erase(uuids_[index]);
  ++resets_;
  return Status::Ok();
}

Status InjectingBackend::Probe(int index) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index >= 0 && index < static_cast<int>(uuids_.size()) && lost_.count(uuids_[index])) {
      return Status::Unavailable("GPU " + uuids_[index] + " does not answer (injected)");
    }
  }
  return inner_->Probe(index);
}

int InjectingBackend::resets() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resets_;
}

}  // namespace vgpu::device
