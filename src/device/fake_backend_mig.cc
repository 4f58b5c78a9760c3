// FakeBackend's MIG: a small model of the driver's rules (legal starts, no overlap, max counts,
// IN_USE while busy, pending modes without a reset) over profiles a test gives it.
#include <algorithm>
#include <cstdio>

#include "device/fake_backend.h"

namespace vgpu::device {
namespace {

int GiId(int size, int start) {
  return size == 8 ? 0 : size == 4 ? 1 + start / 4 : size == 2 ? 3 + start / 2 : 7 + start;
}

}  // namespace

FakeBackend::MigGpu& FakeBackend::MigLocked(int index) {
  if (index >= static_cast<int>(mig_.size())) mig_.resize(index + 1);
  return mig_[index];
}

void FakeBackend::SetMigProfiles(int index, std::vector<MigProfileInfo> profiles,
                                 bool toggles_at_once) {
  std::lock_guard<std::mutex> lock(mu_);
  MigGpu& g = MigLocked(index);
  g.supported = true;
  g.toggles_at_once = toggles_at_once;
  g.profiles = std::move(profiles);
}

void FakeBackend::ResetGpu(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  MigGpu& g = MigLocked(index);
  g.instances.clear();
  g.mode.current = g.mode.pending;
}

void FakeBackend::SetBusy(int index, bool busy) {
  std::lock_guard<std::mutex> lock(mu_);
  MigLocked(index).busy = busy;
}

ComputeMode FakeBackend::compute_mode(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index < static_cast<int>(mig_.size()) ? mig_[index].compute_mode : ComputeMode::kDefault;
}

std::vector<std::string> FakeBackend::mig_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mig_calls_;
}

Result<MigModeState> FakeBackend::GetMigMode(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  MigGpu& g = MigLocked(index);
  if (!g.supported) return Status::FailedPrecondition("GPU " + std::to_string(index) + ": no MIG");
  return g.mode;
}

Status FakeBackend::SetMigMode(int index, bool enabled) {
  std::lock_guard<std::mutex> lock(mu_);
  MigGpu& g = MigLocked(index);
  if (!g.supported) return Status::FailedPrecondition("GPU " + std::to_string(index) + ": no MIG");
  if (g.busy || (!enabled && !g.instances.empty())) {
    return Status::FailedPrecondition("GPU " + std::to_string(index) + " is in use");
  }
  mig_calls_.push_back("mode " + std::to_string(index) + (enabled ? " on" : " off"));
  g.mode.pending = enabled;
  if (g.toggles_at_once) g.mode.current = enabled;
  if (g.mode.current != enabled) {
    return Status::FailedPrecondition("MIG mode pending until GPU " + std::to_string(index) +
                                      " is reset");
  }
  return Status::Ok();
}

Result<std::vector<MigProfileInfo>> FakeBackend::MigProfiles(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  MigGpu& g = MigLocked(index);
  if (!g.supported) return Status::FailedPrecondition("GPU " + std::to_string(index) + ": no MIG");
  return g.profiles;
}

Result<std::vector<MigInstance>> FakeBackend::MigInstances(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  MigGpu& g = MigLocked(index);
  if (!g.supported) return Status::FailedPrecondition("GPU " + std::to_string(index) + ": no MIG");
  return g.instances;
}

Result<MigInstance> FakeBackend::CreateMigInstance(int index, int profile_id, int start) {
  std::lock_guard<std::mutex> lock(mu_);
  MigGpu& g = MigLocked(index);
  if (!g.supported || !g.mode.current) {
    return Status::FailedPrecondition("GPU " + std::to_string(index) + ": MIG is off");
  }
  auto p = std::find_if(g.profiles.begin(), g.profiles.end(),
                        [&](const MigProfileInfo& i) { return i.profile_id == profile_id; });
  if (p == g.profiles.end())
    return Status::InvalidArgument("no profile id " + std::to_string(profile_id));
  if (std::find(p->starts.begin(), p->starts.end(), start) == p->starts.end()) {
    return Status::InvalidArgument(p->name + ": no placement at " + std::to_string(start));
  }
  int count = 0;
  for (const MigInstance& m : g.instances) {
    if (m.profile_id == profile_id) ++count;
    if (start < m.start + m.size && m.start < start + p->memory_slices) {
      return Status::ResourceExhausted(p->name + "@" + std::to_string(start) + " overlaps " +
                                       m.profile + "@" + std::to_string(m.start));
    }
  }
  if (count >= p->max_count) return Status::ResourceExhausted("too many " + p->name);
  MigInstance m;
  m.gpu_index = index;
  m.gi_id = GiId(p->memory_slices, start);
  m.ci_id = 0;
  char uuid[64];
  std::snprintf(uuid, sizeof(uuid), "MIG-%08x-%04x-4000-8000-%012x", 0x316e0000u + index, m.gi_id,
                static_cast<unsigned>(start));
  m.uuid = uuid;
  m.profile_id = profile_id;
  m.profile = p->name;
  m.start = start;
  m.size = p->memory_slices;
  m.memory_bytes = p->memory_bytes;
  m.sm_count = p->sm_count;
  g.instances.push_back(m);
  std::sort(g.instances.begin(), g.instances.end(),
            [](const MigInstance& a, const MigInstance& b) { return a.start < b.start; });
  mig_calls_.push_back("create " + std::to_string(index) + " " + std::to_string(profile_id) + "@" +
                       std::to_string(start));
  return m;
}

Status FakeBackend::DestroyMigInstance(int index, int gi_id) {
  std::lock_guard<std::mutex> lock(mu_);
  MigGpu& g = MigLocked(index);
  auto it = std::find_if(g.instances.begin(), g.instances.end(),
                         [&](const MigInstance& m) { return m.gi_id == gi_id; });
  if (it == g.instances.end()) return Status::NotFound("no GPU instance " + std::to_string(gi_id));
  if (g.busy) return Status::FailedPrecondition("GPU " + std::to_string(index) + " is in use");
  g.instances.erase(it);
  mig_calls_.push_back("destroy " + std::to_string(index) + " " + std::to_string(gi_id));
  return Status::Ok();
}

Status FakeBackend::SetComputeMode(int index, ComputeMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  MigLocked(index).compute_mode = mode;
  mig_calls_.push_back("compute-mode " + std::to_string(index) + " " +
                       std::to_string(static_cast<int>(mode)));
  return Status::Ok();
}

}  // namespace vgpu::device
