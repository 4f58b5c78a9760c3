// AssignmentStore's side of NVIDIA's MIG resources: containers given MIG instances by UUID.
#include <algorithm>
#include <mutex>
#include <tuple>

#include "node/plugin/assignment_store.h"

namespace vgpu::node {
namespace {

using MigDeviceRef = AssignmentStore::MigDeviceRef;

// Every GPU of the container names a MIG instance.
bool AsksForMig(const AssignmentEntry& e) {
  if (e.container.devices.empty()) return false;
  for (const AssignedDevice& d : e.container.devices) {
    if (!d.mig.has_value()) return false;
  }
  return true;
}

// `d` is assigned exactly the instance `r` (by UUID when the assignment names one).
bool SameInstance(const AssignedDevice& d, const MigDeviceRef& r) {
  if (!d.mig.has_value() || d.uuid != r.gpu_uuid || d.mig->profile != r.profile) return false;
  return d.mig->uuid.empty() ? d.mig->start == r.start : d.mig->uuid == r.uuid;
}

// `d` is assigned an existing instance (it has a UUID) of r's profile.
bool SameProfile(const AssignedDevice& d, const MigDeviceRef& r) {
  return d.mig.has_value() && !d.mig->uuid.empty() && d.mig->profile == r.profile;
}

// Pairs every device of `e` with a distinct one of `refs` by `match`; true when all pair.
template <typename Match>
bool PairAll(const AssignmentEntry& e, const std::vector<MigDeviceRef>& refs, Match match) {
  if (e.container.devices.size() != refs.size()) return false;
  std::vector<bool> used(refs.size(), false);
  for (const AssignedDevice& d : e.container.devices) {
    bool paired = false;
    for (size_t i = 0; i < refs.size() && !paired; ++i) {
      if (!used[i] && match(d, refs[i])) used[i] = paired = true;
    }
    if (!paired) return false;
  }
  return true;
}
}  // namespace

std::optional<std::vector<std::string>> AssignmentStore::PreferMig(
    const std::vector<MigDeviceRef>& available, int size, int64_t now_ms) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  EntryPtr best;
  std::vector<std::string> best_units;
  for (const auto& [key, e] : entries_) {
    if (e->allocated.load() || !AsksForMig(*e) ||
        static_cast<int>(e->container.devices.size()) != size) {
      continue;
    }
    if (e->promised_at_ms != 0 && now_ms - e->promised_at_ms < promise_ttl_ms_) continue;
    if (best && !Older(*e, *best)) continue;
    std::vector<std::string> units;
    for (const AssignedDevice& d : e->container.devices) {
      for (const MigDeviceRef& r : available) {
        if (SameInstance(d, r) && !HeldByOtherLocked(r.uuid, *e)) {
          units.push_back(r.uuid);
          break;
        }
      }
    }
    if (units.size() != e->container.devices.size()) continue;
    best = e;
    best_units = std::move(units);
  }
  if (!best) return std::nullopt;
  SetUnitsLocked(best, best_units);
  best->promised_at_ms = now_ms;
  return best->units;
}

Result<std::shared_ptr<const AssignmentEntry>> AssignmentStore::ResolveMig(
    const std::vector<MigDeviceRef>& devices) {
  std::vector<std::string> units;
  for (const MigDeviceRef& r : devices) units.push_back(r.uuid);
  std::sort(units.begin(), units.end());
  if (units.empty()) return Status::InvalidArgument("the request names no device");
  if (std::adjacent_find(units.begin(), units.end()) != units.end()) {
    return Status::InvalidArgument("MIG device " + units.front() + " is named twice");
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (auto it = holders_.find(units.front()); it != holders_.end() && !it->second.empty()) {
    EntryPtr pending, done;
    for (const EntryPtr& h : it->second) {
      if (h->units == units) (h->allocated.load() ? done : pending) = h;
    }
    EntryPtr found = pending ? pending : done;
    if (!found) {
      return Status::FailedPrecondition("MIG device " + units.front() + " is held by " +
                                        it->second.front()->Describe());
    }
    found->allocated.store(true);
    return std::shared_ptr<const AssignmentEntry>(found);
  }
  for (const std::string& u : units) {
    if (auto it = holders_.find(u); it != holders_.end() && !it->second.empty()) {
      return Status::FailedPrecondition("MIG device " + u + " is held by " +
                                        it->second.front()->Describe());
    }
  }
  EntryPtr exact, by_profile;
  for (const auto& [key, e] : entries_) {
    if (e->allocated.load() || !AsksForMig(*e)) continue;
    if (PairAll(*e, devices, SameInstance)) {
      if (!exact || Older(*e, *exact)) exact = e;
    } else if (PairAll(*e, devices, SameProfile)) {
      if (!by_profile || Older(*e, *by_profile)) by_profile = e;
    }
  }
  EntryPtr best = exact ? exact : by_profile;
  if (!best) {
    return Status::NotFound("no pod on this node is assigned MIG instance " + devices.front().uuid +
                            " (" + devices.front().profile + ") or another " +
                            devices.front().profile + " and still waiting for it");
  }
  SetUnitsLocked(best, units);
  best->allocated.store(true);
  return std::shared_ptr<const AssignmentEntry>(best);
}

}  // namespace vgpu::node
