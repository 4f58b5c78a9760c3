// Allocator's side of NVIDIA's MIG resources (nvidia.com/mig-<profile>) on GPUs in mode mig.
#include <algorithm>
#include <set>

#include "common/clock.h"
#include "common/log.h"
#include "node/plugin/allocator.h"

namespace vgpu::node {

std::optional<Allocator::StaticMig> Allocator::FindStaticMig(const std::string& mig_uuid) const {
  for (const device::DeviceInfo& d : state_->devices()) {
    if (state_->Mode(d.index) != k8s::GpuMode::kMig) continue;
    for (const device::MigInstance& m : state_->MigInstances(d.index)) {
      if (m.uuid == mig_uuid && m.ci_id >= 0) {
        return StaticMig{m, {m.uuid, d.uuid, m.profile, m.start}, d.index};
      }
    }
  }
  return std::nullopt;
}

Result<ContainerAllocation> Allocator::AllocateMig(const std::vector<std::string>& mig_uuids) {
  return Counted(mig_uuids, [&] { return AllocateMigOnce(mig_uuids); });
}

Result<ContainerAllocation> Allocator::AllocateMigOnce(const std::vector<std::string>& mig_uuids) {
  if (mig_uuids.empty()) return Status::InvalidArgument("the request names no device");
  std::vector<AssignmentStore::MigDeviceRef> refs;
  std::vector<StaticMig> instances;
  for (const std::string& id : mig_uuids) {
    std::optional<StaticMig> m = FindStaticMig(id);
    if (!m) {
      return Status::InvalidArgument("device ID " + id +
                                     " is not a MIG instance of a GPU in mode mig on this node");
    }
    refs.push_back(m->ref);
    instances.push_back(*m);
  }
  auto entry = store_->ResolveMig(refs);
  if (!entry) return entry.error();
  const AssignmentEntry& e = **entry;
  ContainerSlice spec = SpecOf(e);
  std::map<std::string, uint64_t> capacity_of;  // by MIG UUID, for the spill admission
  // Each instance takes the limits of the assigned device it pairs with: the same instance,
  // else (kubelet chose another one) one of the same profile.
  std::vector<bool> used(e.container.devices.size(), false);
  for (size_t i = 0; i < refs.size(); ++i) {
    const AssignmentStore::MigDeviceRef& r = refs[i];
    int pick = -1;
    for (int pass = 0; pass < 2 && pick < 0; ++pass) {
      for (size_t j = 0; j < e.container.devices.size() && pick < 0; ++j) {
        const AssignedDevice& d = e.container.devices[j];
        if (used[j] || !d.mig || d.mig->profile != r.profile) continue;
        const bool same = d.uuid == r.gpu_uuid &&
                          (d.mig->uuid.empty() ? d.mig->start == r.start : d.mig->uuid == r.uuid);
        if (pass == 1 || same) pick = static_cast<int>(j);
      }
    }
    if (pick < 0) {
      return Status::Internal("MIG device " + r.uuid + " resolved to " + e.Describe() +
                              ", which is not assigned a " + r.profile);
    }
    used[pick] = true;
    const AssignedDevice& d = e.container.devices[pick];
    if (d.uuid != r.gpu_uuid || d.mig->start != r.start) {
      VGPU_LOG_WARN("%s was assigned %s@%d on GPU %s; kubelet gave it %s (%s@%d on GPU %s)",
                    e.Describe().c_str(), d.mig->profile.c_str(), d.mig->start, d.uuid.c_str(),
                    r.uuid.c_str(), r.profile.c_str(), r.start, r.gpu_uuid.c_str());
    }
    const device::MigInstance& m = instances[i].instance;
    if (d.memory_bytes > m.memory_bytes) {
      return Status::FailedPrecondition(
          e.Describe() + " is assigned " + std::to_string(d.memory_bytes >> 20) + " MiB on " +
          m.uuid + ", which has " + std::to_string(m.memory_bytes >> 20) + " MiB");
    }
    // unit -1: the slice holds the instance itself (its UUID is the unit kubelet knows).
    spec.devices.push_back(
        {m.uuid, instances[i].gpu_index, -1, d.memory_bytes, d.cores, m.gi_id, m.ci_id});
    capacity_of[m.uuid] = m.memory_bytes;
  }
  return Finish(std::move(spec), e, capacity_of);
}

std::vector<std::string> Allocator::PreferMig(const std::vector<std::string>& available,
                                              const std::vector<std::string>& must_include,
                                              int size) {
  std::vector<AssignmentStore::MigDeviceRef> refs;
  std::set<std::string> seen;
  for (const auto* list : {&must_include, &available}) {
    for (const std::string& id : *list) {
      if (!seen.insert(id).second) continue;
      if (std::optional<StaticMig> m = FindStaticMig(id)) refs.push_back(m->ref);
    }
  }
  const int64_t now_ms = MonotonicClock::Instance().NowNanos() / 1'000'000;
  auto chosen = store_->PreferMig(refs, size, now_ms);
  if (!chosen && pods_ != nullptr) {
    Status refreshed = pods_->Refresh();
    if (!refreshed.ok()) VGPU_LOG_WARN("GetPreferredAllocation: %s", refreshed.ToString().c_str());
    chosen = store_->PreferMig(refs, size, now_ms);
  }
  if (chosen && std::all_of(must_include.begin(), must_include.end(), [&](const std::string& m) {
        return std::find(chosen->begin(), chosen->end(), m) != chosen->end();
      })) {
    preferred_.fetch_add(1);
    return *chosen;
  }
  unpreferred_.fetch_add(1);
  // No pending assignment: kubelet's own order, must_include first.
  std::vector<std::string> out = must_include;
  for (const std::string& id : available) {
    if (static_cast<int>(out.size()) >= size) break;
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  }
  return out;
}

}  // namespace vgpu::node
