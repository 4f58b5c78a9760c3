#include "device/fake_backend.h"

#include <chrono>
#include <cstdio>

namespace vgpu::device {

const char* HealthEventKindName(HealthEvent::Kind kind) {
  switch (kind) {
    case HealthEvent::Kind::kXid:
      return "xid";
    case HealthEvent::Kind::kDoubleBitEcc:
      return "ecc-dbe";
    case HealthEvent::Kind::kSingleBitEcc:
      return "ecc-sbe";
    case HealthEvent::Kind::kRecovered:
      return "recovered";
    case HealthEvent::Kind::kRecoveryAction:
      return "recovery-action";
  }
  return "unknown";
}

int FakeBackend::AddDevice(DeviceInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  info.index = static_cast<int>(devices_.size());
  devices_.push_back(std::move(info));
  samples_.emplace_back();
  lost_.push_back(false);
  return static_cast<int>(devices_.size()) - 1;
}

void FakeBackend::AddDefaultDevices(int count, uint64_t memory_bytes, int seed) {
  for (int i = 0; i < count; ++i) {
    DeviceInfo d;
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-%08x-0000-4000-8000-%012x", 0xfa4e0000u + seed, i);
    d.uuid = uuid;
    d.name = "vgpu fake H100";
    char bus[32];
    std::snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x18 + 0x10 * i);
    d.pci_bus_id = bus;
    d.memory_total_bytes = memory_bytes;
    d.sm_count = 132;
    d.numa_node = i < (count + 1) / 2 ? 0 : 1;
    d.minor_number = i;
    AddDevice(std::move(d));
  }
}

void FakeBackend::SetSample(int index, const DeviceSample& sample) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index >= 0 && index < static_cast<int>(samples_.size())) samples_[index] = sample;
}

void FakeBackend::SetUtilization(int index, double sm, double memory_bandwidth) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int>(samples_.size())) return;
  samples_[index].sm_utilization = sm;
  samples_[index].memory_bandwidth_utilization = memory_bandwidth;
}

void FakeBackend::SetMemoryUsed(int index, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index >= 0 && index < static_cast<int>(samples_.size())) {
    samples_[index].memory_used_bytes = bytes;
  }
}

void FakeBackend::SetProcesses(int index, std::vector<ProcessUsage> processes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index >= 0 && index < static_cast<int>(samples_.size())) {
    samples_[index].processes = std::move(processes);
  }
}

void FakeBackend::SetLost(int index, bool lost) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index >= 0 && index < static_cast<int>(lost_.size())) lost_[index] = lost;
}

void FakeBackend::InjectEvent(HealthEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

void FakeBackend::InjectXid(int index, uint64_t xid) {
  HealthEvent e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index < 0 || index >= static_cast<int>(devices_.size())) return;
    e.uuid = devices_[index].uuid;
  }
  e.kind = HealthEvent::Kind::kXid;
  e.code = xid;
  e.description = "injected XID " + std::to_string(xid);
  InjectEvent(std::move(e));
}

void FakeBackend::FailDiscovery(std::string message) {
  std::lock_guard<std::mutex> lock(mu_);
  discovery_error_ = std::move(message);
}

int FakeBackend::discover_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return discover_calls_;
}

std::string FakeBackend::Describe() const {
  std::lock_guard<std::mutex> lock(mu_);
  return "fake (" + std::to_string(devices_.size()) + " GPUs)";
}

Result<std::vector<DeviceInfo>> FakeBackend::Discover() {
  std::lock_guard<std::mutex> lock(mu_);
  ++discover_calls_;
  if (!discovery_error_.empty()) return Status::Unavailable(discovery_error_);
  return devices_;
}

Result<DeviceSample> FakeBackend::Sample(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int>(samples_.size())) {
    return Status::NotFound("no GPU with index " + std::to_string(index));
  }
  if (lost_[index]) {
    return Status::Unavailable("GPU " + devices_[index].uuid + " does not answer");
  }
  return samples_[index];
}

std::vector<HealthEvent> FakeBackend::WaitForEvents(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return !events_.empty(); });
  std::vector<HealthEvent> out(events_.begin(), events_.end());
  events_.clear();
  return out;
}

Status FakeBackend::Reset(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int>(lost_.size())) {
    return Status::InvalidArgument("no GPU " + std::to_string(index));
  }
  lost_[index] = false;
  ++resets_;
  return Status::Ok();
}

void FakeBackend::FailProbes(int index, std::string message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0) return;
  if (probe_failures_.size() <= static_cast<size_t>(index)) probe_failures_.resize(index + 1);
  probe_failures_[index] = std::move(message);
}

Status FakeBackend::Probe(int index) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++probes_;
    if (index >= 0 && static_cast<size_t>(index) < probe_failures_.size() &&
        !probe_failures_[index].empty()) {
      return Status::Unavailable(probe_failures_[index]);
    }
  }
  return Sample(index).status();
}

int FakeBackend::probes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return probes_;
}

int FakeBackend::resets() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resets_;
}

void FakeBackend::SetTopology(topo::Topology topology) {
  std::lock_guard<std::mutex> lock(mu_);
  topology_ = std::move(topology);
}

Result<topo::Topology> FakeBackend::ReadTopology() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!topology_) return Status::Unavailable("fake backend: no topology set");
  return *topology_;
}

}  // namespace vgpu::device
