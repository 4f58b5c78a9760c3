#include "node/assignment_store.h"

#include <algorithm>
#include <mutex>
#include <tuple>

namespace vgpu::node {
namespace {

std::string EntryKey(const std::string& uid, const std::string& container) {
  return uid + "/" + container;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> AssignmentStore::Update(
    const std::vector<PodInfo>& pods) {
  std::vector<std::pair<std::string, std::string>> errors;
  std::map<std::string, bool> allocated;  // entry key -> mark
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    for (const auto& [uid, entries] : by_pod_uid_) {
      for (const EntryPtr& e : entries) {
        allocated[EntryKey(uid, e->container.name)] = e->allocated.load();
      }
    }
  }
  std::map<std::string, EntryPtr> by_unit;
  std::map<std::string, std::vector<EntryPtr>> by_pod;
  for (const PodInfo& pod : pods) {
    if (pod.Terminated()) continue;
    auto it = pod.annotations.find(kAssignmentAnnotation);
    if (it == pod.annotations.end()) continue;
    auto parsed = ParseAssignment(it->second);
    if (!parsed) {
      errors.emplace_back(pod.Key(), parsed.error().message());
      continue;
    }
    for (ContainerAssignment& c : parsed->containers) {
      auto e = std::make_shared<AssignmentEntry>();
      e->pod_ns = pod.ns;
      e->pod_name = pod.name;
      e->pod_uid = pod.uid;
      e->pod_created_unix = pod.created_unix;
      e->unit_ids = c.UnitIds();
      e->container = std::move(c);
      auto mark = allocated.find(EntryKey(pod.uid, e->container.name));
      if (mark != allocated.end()) e->allocated.store(mark->second);
      for (const std::string& u : e->unit_ids) {
        auto [slot, inserted] = by_unit.emplace(u, e);
        if (!inserted) {
          // Two live containers claim one unit: the scheduler's invariant is broken. Neither
          // may be allocated through it (a null entry poisons the unit).
          errors.emplace_back(pod.Key(), "unit " + u + " is also assigned to " +
                                             (slot->second ? slot->second->Describe()
                                                           : std::string("another pod")));
          slot->second = nullptr;
        }
      }
      by_pod[pod.uid].push_back(e);
    }
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  by_unit_.swap(by_unit);
  by_pod_uid_.swap(by_pod);
  return errors;
}

Status AssignmentStore::Upsert(const PodInfo& pod) {
  auto it = pod.annotations.find(kAssignmentAnnotation);
  if (it == pod.annotations.end()) {
    return Status::NotFound(pod.Key() + " has no " + kAssignmentAnnotation + " annotation");
  }
  auto parsed = ParseAssignment(it->second);
  if (!parsed) return parsed.error().WithContext(pod.Key());
  std::unique_lock<std::shared_mutex> lock(mu_);
  std::map<std::string, bool> allocated;
  auto old = by_pod_uid_.find(pod.uid);
  if (old != by_pod_uid_.end()) {
    for (const EntryPtr& e : old->second) {
      allocated[e->container.name] = e->allocated.load();
      for (const std::string& u : e->unit_ids) {
        auto slot = by_unit_.find(u);
        if (slot != by_unit_.end() && slot->second == e) by_unit_.erase(slot);
      }
    }
    by_pod_uid_.erase(old);
  }
  std::vector<EntryPtr> entries;
  for (ContainerAssignment& c : parsed->containers) {
    auto e = std::make_shared<AssignmentEntry>();
    e->pod_ns = pod.ns;
    e->pod_name = pod.name;
    e->pod_uid = pod.uid;
    e->pod_created_unix = pod.created_unix;
    e->unit_ids = c.UnitIds();
    e->container = std::move(c);
    if (allocated.count(e->container.name)) e->allocated.store(allocated[e->container.name]);
    for (const std::string& u : e->unit_ids) {
      auto slot = by_unit_.find(u);
      if (slot != by_unit_.end()) {
        return Status::FailedPrecondition(
            pod.Key() + ": unit " + u + " is also assigned to " +
            (slot->second ? slot->second->Describe() : std::string("another pod")));
      }
    }
    entries.push_back(std::move(e));
  }
  for (const EntryPtr& e : entries) {
    for (const std::string& u : e->unit_ids) by_unit_[u] = e;
    by_pod_uid_[pod.uid].push_back(e);
  }
  return Status::Ok();
}

Result<std::shared_ptr<const AssignmentEntry>> AssignmentStore::FindByUnits(
    std::vector<std::string> unit_ids) const {
  std::sort(unit_ids.begin(), unit_ids.end());
  unit_ids.erase(std::unique(unit_ids.begin(), unit_ids.end()), unit_ids.end());
  if (unit_ids.empty()) return Status::InvalidArgument("no device IDs in the request");
  std::shared_lock<std::shared_mutex> lock(mu_);
  EntryPtr found;
  for (const std::string& u : unit_ids) {
    auto it = by_unit_.find(u);
    if (it == by_unit_.end()) continue;
    if (it->second == nullptr) {
      return Status::FailedPrecondition("unit " + u + " is assigned to more than one container");
    }
    if (found && found != it->second) {
      return Status::FailedPrecondition("units " + unit_ids.front() + ", ... belong to two " +
                                        "containers: " + found->Describe() + " and " +
                                        it->second->Describe());
    }
    found = it->second;
  }
  if (!found) {
    return Status::NotFound("no pod on this node is assigned unit " + unit_ids.front() +
                            (unit_ids.size() > 1 ? " (or the other requested units)" : ""));
  }
  if (found->unit_ids != unit_ids) {
    return Status::FailedPrecondition("kubelet chose units that differ from the assignment of " +
                                      found->Describe() + " (requested " +
                                      std::to_string(unit_ids.size()) + ", assigned " +
                                      std::to_string(found->unit_ids.size()) + "; first assigned " +
                                      found->unit_ids.front() + ")");
  }
  return std::shared_ptr<const AssignmentEntry>(found);
}

std::optional<std::vector<std::string>> AssignmentStore::Prefer(
    const std::vector<std::string>& available, const std::vector<std::string>& must_include,
    int size) const {
  std::set<std::string> avail(available.begin(), available.end());
  avail.insert(must_include.begin(), must_include.end());
  std::shared_lock<std::shared_mutex> lock(mu_);
  const AssignmentEntry* best = nullptr;
  for (const auto& [uid, entries] : by_pod_uid_) {
    for (const EntryPtr& e : entries) {
      if (e->allocated.load() || static_cast<int>(e->unit_ids.size()) != size) continue;
      bool fits = std::all_of(e->unit_ids.begin(), e->unit_ids.end(), [&](const std::string& u) {
        auto owner = by_unit_.find(u);
        return avail.count(u) > 0 && owner != by_unit_.end() && owner->second == e;
      });
      bool includes = std::all_of(must_include.begin(), must_include.end(), [&](const auto& u) {
        return std::binary_search(e->unit_ids.begin(), e->unit_ids.end(), u);
      });
      if (!fits || !includes) continue;
      if (best == nullptr ||
          std::tie(e->pod_created_unix, e->pod_ns, e->pod_name, e->container.name) <
              std::tie(best->pod_created_unix, best->pod_ns, best->pod_name,
                       best->container.name)) {
        best = e.get();
      }
    }
  }
  if (best == nullptr) return std::nullopt;
  return best->unit_ids;
}

void AssignmentStore::MarkAllocated(const AssignmentEntry& entry) const {
  entry.allocated.store(true);
}

void AssignmentStore::MarkAllocatedByKey(const std::string& pod_uid, const std::string& container) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = by_pod_uid_.find(pod_uid);
  if (it == by_pod_uid_.end()) return;
  for (const EntryPtr& e : it->second) {
    if (e->container.name == container) e->allocated.store(true);
  }
}

size_t AssignmentStore::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [uid, entries] : by_pod_uid_) n += entries.size();
  return n;
}

std::set<std::string> AssignmentStore::PodUids() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::set<std::string> out;
  for (const auto& [uid, entries] : by_pod_uid_) out.insert(uid);
  return out;
}

}  // namespace vgpu::node
