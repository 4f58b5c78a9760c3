#include "device/injecting_backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>

namespace vgpu::device {
namespace {

constexpr int kNvmlSuccess = 0;
constexpr int kNvmlNotFound = 6;
constexpr int kNvmlInUse = 19;

}  // namespace

InjectingBackend::InjectingBackend(std::unique_ptr<DeviceBackend> inner,
                                   const std::string& sim_nvml_library)
    : inner_(std::move(inner)) {
  if (sim_nvml_library.empty()) return;
  // The wrapped backend has loaded it already: this finds the same copy (never unloaded).
  void* lib = dlopen(sim_nvml_library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return;
  inject_stuck_ = reinterpret_cast<InjectStuckFn>(dlsym(lib, "vgpuSimgpuInjectStuckKernel"));
  clear_stuck_ = reinterpret_cast<ClearStuckFn>(dlsym(lib, "vgpuSimgpuClearStuckKernel"));
  running_kernel_ = reinterpret_cast<RunningKernelFn>(dlsym(lib, "vgpuSimgpuRunningKernel"));
}

int InjectingBackend::IndexOfLocked(const std::string& uuid) const {
  for (size_t i = 0; i < uuids_.size(); ++i) {
    if (uuids_[i] == uuid) return static_cast<int>(i);
  }
  return -1;
}

Result<unsigned> InjectingBackend::SimIndex(const std::string& uuid, bool available) const {
  int index;
  {
    std::lock_guard<std::mutex> lock(mu_);
    index = IndexOfLocked(uuid);
  }
  if (index < 0) return Status::InvalidArgument("no GPU " + uuid);
  if (!available) {
    return Status::FailedPrecondition("stuck kernels are injected on the simulated GPU only");
  }
  return static_cast<unsigned>(index);
}

Status InjectingBackend::InjectStuckKernel(const std::string& uuid, uint32_t pid) {
  Result<unsigned> index = SimIndex(uuid, inject_stuck_ != nullptr);
  if (!index) return index.status();
  const int rc = inject_stuck_(*index, pid);
  if (rc == kNvmlInUse) return Status::FailedPrecondition("a kernel is stuck on " + uuid);
  if (rc != kNvmlSuccess) {
    return Status::Unavailable("vgpuSimgpuInjectStuckKernel: NVML error " + std::to_string(rc));
  }
  return Status::Ok();
}

Status InjectingBackend::ClearStuckKernel(const std::string& uuid) {
  Result<unsigned> index = SimIndex(uuid, clear_stuck_ != nullptr);
  if (!index) return index.status();
  const int rc = clear_stuck_(*index);
  if (rc == kNvmlNotFound) return Status::NotFound("no stuck kernel on " + uuid);
  if (rc != kNvmlSuccess) {
    return Status::Unavailable("vgpuSimgpuClearStuckKernel: NVML error " + std::to_string(rc));
  }
  return Status::Ok();
}

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
  Result<DeviceSample> sample = inner_->Sample(index);
  if (sample && running_kernel_ != nullptr && index >= 0) {
    unsigned pid = 0;
    unsigned long long running_ns = 0;
    if (running_kernel_(static_cast<unsigned>(index), &pid, &running_ns) == kNvmlSuccess) {
      sample->running_kernel = DeviceSample::RunningKernel{pid, static_cast<int64_t>(running_ns)};
    }
  }
  return sample;
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
  // A reset ends the work on the GPU, a stuck kernel too.
  if (clear_stuck_ != nullptr) (void)clear_stuck_(static_cast<unsigned>(index));
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
