#include "node/plugin/allocator.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <set>

#include "common/clock.h"
#include "common/log.h"
#include "node/plugin/unit_id.h"
#include "node/slice_control.h"
#include "slice/host_memory.h"

namespace vgpu::node {
namespace {

int64_t WallClockUnix() { return static_cast<int64_t>(std::time(nullptr)); }

}  // namespace

ContainerSlice SpecOf(const AssignmentEntry& e) {
  ContainerSlice spec;
  spec.pod_ns = e.pod_ns;
  spec.pod_name = e.pod_name;
  spec.pod_uid = e.pod_uid;
  spec.container = e.container.name;
  spec.priority = e.container.priority;
  spec.compute = e.container.compute;
  return spec;
}

Allocator::Allocator(const NodeState* state, AssignmentStore* store, PodSync* pods,
                     SliceManager* slices, int64_t (*now_unix)())
    : state_(state),
      store_(store),
      pods_(pods),
      slices_(slices),
      now_unix_(now_unix != nullptr ? now_unix : WallClockUnix),
      latency_({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}) {}

Status Allocator::CheckUnits(const std::vector<std::string>& unit_ids) const {
  if (unit_ids.empty()) return Status::InvalidArgument("the request names no device");
  for (const std::string& id : unit_ids) {
    auto ref = ParseUnitId(id);
    if (!ref) return ref.error();
    if (state_->FindByUuid(ref->gpu_uuid) == nullptr) {
      return Status::InvalidArgument("device ID " + id + ": GPU " + ref->gpu_uuid +
                                     " is not on this node");
    }
    if (ref->unit >= state_->units_per_gpu()) {
      return Status::InvalidArgument("device ID " + id + ": unit " + std::to_string(ref->unit) +
                                     " is beyond the " + std::to_string(state_->units_per_gpu()) +
                                     " units per GPU");
    }
  }
  return Status::Ok();
}

Status Allocator::AdmitSpill(const ContainerSlice& spec,
                             const std::map<std::string, uint64_t>& capacity) const {
  uint64_t already = 0;
  std::vector<slice::SpillGpu> gpus;
  for (const SliceDevice& d : spec.devices) {
    auto cap = capacity.find(d.uuid);
    gpus.push_back({d.uuid, cap == capacity.end() ? 0 : cap->second, 0, d.memory_bytes});
  }
  for (const SliceRecord& r : slices_->List()) {
    if (r.spec.pod_uid == spec.pod_uid && r.spec.container == spec.container) continue;  // itself
    for (const SliceDevice& d : r.spec.devices) {
      for (slice::SpillGpu& g : gpus) {
        if (g.name == d.uuid) g.promised_by_others += d.memory_bytes;
      }
    }
    if (auto view = ReadSliceControl(r.region_path)) already += view->spilled_bytes;
  }
  slice::SpillDecision d = slice::AdmitSpillOnGpus(
      gpus, already, slice::ReadMemAvailable(meminfo_.c_str()), spill_policy_);
  if (d.admitted) return Status::Ok();
  return Status::FailedPrecondition("memory mode spill refused on " + d.reason);
}

Result<ContainerAllocation> Allocator::AllocateOnce(const std::vector<std::string>& unit_ids) {
  auto entry = store_->Resolve(unit_ids);
  if (!entry) return entry.error();
  const AssignmentEntry& e = **entry;
  ContainerSlice spec = SpecOf(e);
  std::map<std::string, uint64_t> capacity_of;  // by device UUID, for the spill admission
  for (const std::string& id : unit_ids) {
    auto ref = ParseUnitId(id);
    if (!ref) return ref.error();
    const device::DeviceInfo* info = state_->FindByUuid(ref->gpu_uuid);
    const AssignedDevice* assigned = nullptr;
    for (const AssignedDevice& d : e.container.devices) {
      if (d.uuid == ref->gpu_uuid) assigned = &d;
    }
    if (info == nullptr || assigned == nullptr) {
      return Status::Internal("unit " + id + " resolved to " + e.Describe() +
                              ", which is not assigned its GPU");
    }
    std::string device_uuid = info->uuid;
    uint64_t capacity = info->memory_total_bytes;
    int gi = -1, ci = -1;
    const k8s::GpuMode mode = state_->Mode(info->index);
    if (assigned->mig.has_value()) {
      auto instance = ResolveMig(e, *info, *assigned);
      if (!instance) return instance.error();
      device_uuid = instance->uuid;
      capacity = instance->memory_bytes;
      gi = instance->gi_id;
      ci = instance->ci_id;
    } else if (mode == k8s::GpuMode::kMig || mode == k8s::GpuMode::kMigDynamic) {
      return Status::FailedPrecondition(e.Describe() + " is assigned GPU " + info->uuid +
                                        " without a MIG instance, but that GPU is in mode " +
                                        std::string(k8s::GpuModeName(mode)));
    }
    if (assigned->memory_bytes > capacity) {
      return Status::FailedPrecondition(
          e.Describe() + " is assigned " + std::to_string(assigned->memory_bytes >> 20) +
          " MiB on " + device_uuid + ", which has " + std::to_string(capacity >> 20) + " MiB");
    }
    spec.devices.push_back(
        {device_uuid, info->index, ref->unit, assigned->memory_bytes, assigned->cores, gi, ci});
    capacity_of[device_uuid] = capacity;
  }
  return Finish(std::move(spec), e, capacity_of);
}

Result<ContainerAllocation> Allocator::Finish(ContainerSlice spec, const AssignmentEntry& e,
                                              const std::map<std::string, uint64_t>& capacity_of) {
  // CUDA index order inside the container: the node's GPU order, or with rank_order the
  // assignment's order, the rank order the scheduler chose for the pod's communication pattern
  // (BuildAllocation then sets CUDA_VISIBLE_DEVICES to make CUDA number them so).
  std::vector<std::pair<size_t, SliceDevice>> ranked;
  for (SliceDevice& d : spec.devices) {
    size_t at = 0;
    if (!e.container.rank_order) {
      at = static_cast<size_t>(d.node_index);
    } else {
      for (; at < e.container.devices.size(); ++at) {
        const device::DeviceInfo* g = state_->FindByUuid(e.container.devices[at].uuid);
        if (g != nullptr && g->index == d.node_index) break;
      }
    }
    ranked.emplace_back(at, std::move(d));
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  spec.devices.clear();
  for (auto& [at, d] : ranked) spec.devices.push_back(std::move(d));
  if (spec.compute.memory_mode == "spill") {
    Status admitted = AdmitSpill(spec, capacity_of);
    if (!admitted.ok()) return admitted.WithContext(e.Describe());
  }
  auto slice = slices_->Create(spec, now_unix_());
  if (!slice) return slice.error().WithContext("creating the slice of " + e.Describe());
  VGPU_LOG_INFO("allocated %s: %zu GPU(s), slice %s", e.Describe().c_str(), spec.devices.size(),
                slice->name.c_str());
  ContainerAllocation allocation = BuildAllocation(*slice, slices_->layout());
  Status listed = ApplyDeviceList(*slice, state_->devices(), device_list_, &allocation);
  if (!listed.ok()) return listed.WithContext("allocating " + e.Describe());
  for (size_t i = 0; i < spec.devices.size() && mps_ != nullptr; ++i) {
    const SliceDevice& d = spec.devices[i];
    if (state_->Mode(d.node_index) != k8s::GpuMode::kMps || !mps_->Running(d.uuid)) continue;
    // One MPS server per container is reachable (one pipe directory): the first MPS GPU's.
    if (allocation.envs.count("CUDA_MPS_PIPE_DIRECTORY")) continue;
    for (const auto& [k, v] :
         mps_->ContainerEnv(d.uuid, static_cast<int>(i), d.memory_bytes, d.cores)) {
      allocation.envs[k] = v;
    }
    for (const MpsMount& m : mps_->ContainerMounts(d.uuid)) {
      allocation.mounts.push_back({m.container_path, m.host_path, false});
    }
  }
  return allocation;
}

Result<device::MigInstance> Allocator::ResolveMig(const AssignmentEntry& e,
                                                  const device::DeviceInfo& gpu,
                                                  const AssignedDevice& assigned) {
  const k8s::AssignedMig& want = *assigned.mig;
  const std::string what = e.Describe() + ": MIG " + want.profile + "@" +
                           std::to_string(want.start) + " on GPU " + gpu.uuid;
  const k8s::GpuMode mode = state_->Mode(gpu.index);
  if (mode == k8s::GpuMode::kMig) {
    for (const device::MigInstance& m : state_->MigInstances(gpu.index)) {
      if (m.profile == want.profile && m.start == want.start && m.ci_id >= 0 &&
          (want.uuid.empty() || want.uuid == m.uuid)) {
        return m;
      }
    }
    return Status::FailedPrecondition(what + ": no such instance in the GPU's static layout");
  }
  if (mode != k8s::GpuMode::kMigDynamic || mig_ == nullptr) {
    return Status::FailedPrecondition(what + ": the GPU is in mode " +
                                      std::string(k8s::GpuModeName(mode)) + ", not mig");
  }
  int profile_id = -1;
  for (const device::MigProfileInfo& p : state_->MigProfiles(gpu.index)) {
    if (p.name == want.profile) profile_id = p.profile_id;
  }
  if (profile_id < 0) return Status::FailedPrecondition(what + ": the GPU has no such profile");
  auto made = mig_->Acquire(e.pod_uid, gpu.index, profile_id, want.start);
  if (!made) return made.error().WithContext(what);
  if (mig_changed_) mig_changed_();
  return made;
}

Result<ContainerAllocation> Allocator::Allocate(const std::vector<std::string>& unit_ids) {
  return Counted(unit_ids, [&]() -> Result<ContainerAllocation> {
    Status checked = CheckUnits(unit_ids);
    if (!checked.ok()) return checked;
    return AllocateOnce(unit_ids);
  });
}

Result<ContainerAllocation> Allocator::Counted(
    const std::vector<std::string>& ids, const std::function<Result<ContainerAllocation>()>& once) {
  auto start = std::chrono::steady_clock::now();
  Result<ContainerAllocation> result = once();
  if (!result && result.error().code() == StatusCode::kNotFound && pods_ != nullptr) {
    Status refreshed = pods_->Refresh();
    if (!refreshed.ok()) {
      VGPU_LOG_WARN("Allocate: %s", refreshed.ToString().c_str());
    }
    result = once();
  }
  latency_.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (result) {
    ok_.fetch_add(1);
  } else {
    failed_.fetch_add(1);
    VGPU_LOG_WARN("Allocate %s%s failed: %s", ids.empty() ? "" : ids.front().c_str(),
                  ids.size() > 1 ? ",..." : "", result.error().ToString().c_str());
  }
  return result;
}

std::vector<std::string> Allocator::Prefer(const std::vector<std::string>& available,
                                           const std::vector<std::string>& must_include, int size) {
  const int64_t now_ms = MonotonicClock::Instance().NowNanos() / 1'000'000;
  auto chosen = store_->Prefer(available, must_include, size, now_ms);
  if (!chosen && pods_ != nullptr) {
    Status refreshed = pods_->Refresh();
    if (!refreshed.ok()) VGPU_LOG_WARN("GetPreferredAllocation: %s", refreshed.ToString().c_str());
    chosen = store_->Prefer(available, must_include, size, now_ms);
  }
  if (chosen) {
    preferred_.fetch_add(1);
    return *chosen;
  }
  unpreferred_.fetch_add(1);
  // No pending assignment fits: kubelet's own order (must_include first), one unit per GPU, since
  // a container never gets two units of one GPU. When fewer GPUs than `size` have a unit
  // available, fewer units are returned (kubelet then chooses by itself, and Allocate refuses
  // the units unless they turn out to belong to an assignment).
  std::vector<std::string> out = must_include;
  std::set<std::string> seen(out.begin(), out.end());
  std::set<std::string> gpus;
  auto gpu_of = [](const std::string& id) {
    auto ref = ParseUnitId(id);
    return ref ? ref->gpu_uuid : id;
  };
  for (const std::string& id : out) gpus.insert(gpu_of(id));
  for (const std::string& id : available) {
    if (static_cast<int>(out.size()) >= size) break;
    if (seen.count(id) || !gpus.insert(gpu_of(id)).second) continue;
    seen.insert(id);
    out.push_back(id);
  }
  VGPU_LOG_INFO(
      "GetPreferredAllocation: no pending assignment of %d unit(s) fits the %zu "
      "available; no preference",
      size, available.size());
  return out;
}

}  // namespace vgpu::node

namespace vgpu::node {

Status Allocator::VerifyPreStart(const std::vector<std::string>& unit_ids) {
  if (pod_resources_ == nullptr) return Status::Ok();
  auto holders = store_->Holders(unit_ids);
  if (holders.empty()) {
    prestart_unverified_.fetch_add(1);
    VGPU_LOG_WARN("PreStartContainer: no slice holds %s%s; not verified",
                  unit_ids.empty() ? "(nothing)" : unit_ids.front().c_str(),
                  unit_ids.size() > 1 ? ",..." : "");
    return Status::Ok();
  }
  auto listed = pod_resources_->List(resource_name_);
  if (!listed) {
    prestart_unverified_.fetch_add(1);
    VGPU_LOG_WARN("PreStartContainer: %s; not verified", listed.error().ToString().c_str());
    return Status::Ok();
  }
  std::vector<std::string> units = unit_ids;
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  const DeviceHolding* holder = nullptr;
  for (const DeviceHolding& h : *listed) {
    if (h.device_ids == units) holder = &h;
  }
  if (holder == nullptr) {
    prestart_unverified_.fetch_add(1);
    VGPU_LOG_WARN("PreStartContainer: kubelet lists no container with %s; not verified",
                  units.front().c_str());
    return Status::Ok();
  }
  for (const auto& e : holders) {
    if (e->pod_ns == holder->ns && e->pod_name == holder->pod &&
        e->container.name == holder->container) {
      prestart_ok_.fetch_add(1);
      return Status::Ok();
    }
  }
  prestart_mismatch_.fetch_add(1);
  Status refused = Status::FailedPrecondition(
      "kubelet gave " + units.front() + (units.size() > 1 ? ",..." : "") + " to " + holder->ns +
      "/" + holder->pod + " container " + holder->container +
      ", but these units hold the slice of " + holders.front()->Describe() +
      ": refusing to start a container with another pod's limits");
  VGPU_LOG_ERROR("PreStartContainer: %s", refused.message().c_str());
  return refused;
}

}  // namespace vgpu::node
