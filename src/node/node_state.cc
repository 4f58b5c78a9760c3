#include "node/node_state.h"

#include <chrono>
#include <set>

#include "node/plugin/unit_id.h"

namespace vgpu::node {
namespace {

std::vector<std::string> Uuids(const std::vector<device::DeviceInfo>& devices) {
  std::vector<std::string> out;
  for (const auto& d : devices) out.push_back(d.uuid);
  return out;
}

bool SameInstances(const std::vector<device::MigInstance>& a,
                   const std::vector<device::MigInstance>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].uuid != b[i].uuid || a[i].profile != b[i].profile || a[i].start != b[i].start ||
        a[i].ci_id != b[i].ci_id) {
      return false;
    }
  }
  return true;
}

}  // namespace

NodeState::NodeState(std::vector<device::DeviceInfo> devices, int units_per_gpu, HealthRules rules)
    : devices_(std::move(devices)),
      units_per_gpu_(units_per_gpu),
      health_(Uuids(devices_), std::move(rules)),
      samples_(devices_.size()),
      mig_(devices_.size()) {}

void NodeState::SetMode(int index, k8s::GpuMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index >= 0 && index < static_cast<int>(mig_.size())) mig_[index].mode = mode;
}

k8s::GpuMode NodeState::Mode(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index >= 0 && index < static_cast<int>(mig_.size()) ? mig_[index].mode
                                                             : k8s::GpuMode::kShared;
}

void NodeState::SetMigProfiles(int index, std::vector<device::MigProfileInfo> profiles) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index >= 0 && index < static_cast<int>(mig_.size()))
    mig_[index].profiles = std::move(profiles);
}

std::vector<device::MigProfileInfo> NodeState::MigProfiles(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int>(mig_.size())) return {};
  return mig_[index].profiles;
}

void NodeState::SetMigInstances(int index, std::vector<device::MigInstance> instances) {
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (index < 0 || index >= static_cast<int>(mig_.size())) return;
    changed = !SameInstances(mig_[index].instances, instances);
    mig_[index].instances = std::move(instances);
    if (changed) ++version_;
  }
  if (changed) cv_.notify_all();
}

std::vector<UnitView> NodeState::MigDevices(const std::string& profile) const {
  std::vector<std::pair<std::string, int>> found;  // (MIG UUID, GPU position)
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < mig_.size(); ++i) {
      if (mig_[i].mode != k8s::GpuMode::kMig) continue;
      for (const device::MigInstance& m : mig_[i].instances) {
        if (m.profile == profile && m.ci_id >= 0 && !m.uuid.empty()) {
          found.emplace_back(m.uuid, static_cast<int>(i));
        }
      }
    }
  }
  std::vector<UnitView> out;
  for (const auto& [uuid, i] : found) {
    out.push_back({uuid, health_.Healthy(devices_[i].uuid), devices_[i].numa_node});
  }
  return out;
}

std::vector<std::string> NodeState::StaticMigProfiles() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> out;
  for (const MigView& v : mig_) {
    if (v.mode != k8s::GpuMode::kMig) continue;
    for (const device::MigInstance& m : v.instances) {
      if (m.ci_id >= 0 && !m.uuid.empty()) out.insert(m.profile);
    }
  }
  return {out.begin(), out.end()};
}

std::vector<device::MigInstance> NodeState::MigInstances(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (index < 0 || index >= static_cast<int>(mig_.size())) return {};
  return mig_[index].instances;
}

const device::DeviceInfo* NodeState::FindByUuid(const std::string& uuid) const {
  for (const auto& d : devices_) {
    if (d.uuid == uuid) return &d;
  }
  return nullptr;
}

std::vector<UnitView> NodeState::Units() const {
  std::vector<UnitView> out;
  out.reserve(devices_.size() * static_cast<size_t>(units_per_gpu_));
  for (const auto& d : devices_) {
    bool healthy = health_.Healthy(d.uuid) && !Cordoned(d.uuid);
    for (int u = 0; u < units_per_gpu_; ++u) {
      out.push_back({MakeUnitId(d.uuid, u), healthy, d.numa_node});
    }
  }
  return out;
}

void NodeState::SetCordoned(const std::string& uuid, bool cordoned) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cordoned ? !cordoned_.insert(uuid).second : cordoned_.erase(uuid) == 0) return;
  }
  NotifyChanged();
}

bool NodeState::Cordoned(const std::string& uuid) const {
  std::lock_guard<std::mutex> lock(mu_);
  return cordoned_.count(uuid) != 0;
}

uint64_t NodeState::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

void NodeState::NotifyChanged() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++version_;
  }
  cv_.notify_all();
}

uint64_t NodeState::WaitForChange(uint64_t seen, int timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
               [&] { return version_ != seen || stopped_; });
  return version_;
}

void NodeState::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

bool NodeState::stopped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

void NodeState::StoreSample(int index, std::optional<device::DeviceSample> sample) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index >= 0 && index < static_cast<int>(samples_.size())) samples_[index] = std::move(sample);
}

std::vector<std::optional<device::DeviceSample>> NodeState::Samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

}  // namespace vgpu::node
