#include "node/plugin/assignment_store.h"

#include <algorithm>
#include <mutex>
#include <tuple>

#include "node/plugin/unit_id.h"

namespace vgpu::node {
// Kubelet admits pods in creation order, and a pod's init containers before its app containers.
bool AssignmentStore::Older(const AssignmentEntry& a, const AssignmentEntry& b) {
  const bool a_app = !a.container.init;
  const bool b_app = !b.container.init;
  return std::tie(a.pod_created_unix, a.assigned_at_ms, a.pod_ns, a.pod_name, a_app,
                  a.container.name) < std::tie(b.pod_created_unix, b.assigned_at_ms, b.pod_ns,
                                               b.pod_name, b_app, b.container.name);
}

void AssignmentStore::SetUnitsLocked(const EntryPtr& e, std::vector<std::string> units) {
  for (const std::string& u : e->units) {
    auto it = holders_.find(u);
    if (it == holders_.end()) continue;
    auto& v = it->second;
    v.erase(std::remove(v.begin(), v.end(), e), v.end());
    if (v.empty()) holders_.erase(it);
  }
  std::sort(units.begin(), units.end());
  e->units = std::move(units);
  for (const std::string& u : e->units) holders_[u].push_back(e);
}

bool AssignmentStore::HeldByOtherLocked(const std::string& unit, const AssignmentEntry& e) const {
  auto it = holders_.find(unit);
  if (it == holders_.end()) return false;
  for (const EntryPtr& h : it->second) {
    if (h.get() == &e) continue;
    if (h->pod_uid == e.pod_uid && (h->container.init || e.container.init)) continue;
    return true;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> AssignmentStore::Update(
    const std::vector<PodInfo>& pods) {
  std::vector<std::pair<std::string, std::string>> errors;
  std::vector<EntryPtr> fresh;
  for (const PodInfo& pod : pods) {
    if (pod.Terminated()) continue;
    auto parsed = AssignmentOfPod(pod);
    if (!parsed) {
      errors.emplace_back(pod.Key(), parsed.error().message());
      continue;
    }
    if (!parsed->has_value()) continue;
    Status compute_ok = Status::Ok();
    for (ContainerAssignment& c : (*parsed)->containers) {
      auto compute = slice::ComputeSettingsOf(pod.annotations, c.name);
      if (!compute) {
        compute_ok = compute.error();
        break;
      }
      c.compute = *compute;
    }
    if (!compute_ok.ok()) {
      errors.emplace_back(pod.Key(), compute_ok.message());
      continue;
    }
    const int64_t at = AssignedAtMillis(pod);
    for (ContainerAssignment& c : (*parsed)->containers) {
      auto e = std::make_shared<AssignmentEntry>();
      e->pod_ns = pod.ns;
      e->pod_name = pod.name;
      e->pod_uid = pod.uid;
      e->pod_created_unix = pod.created_unix;
      e->assigned_at_ms = at;
      e->gpus = c.GpuUuids();
      e->container = std::move(c);
      fresh.push_back(std::move(e));
    }
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  std::map<std::string, EntryPtr> entries;
  std::map<std::string, std::vector<std::string>> keep_units;
  std::map<std::string, bool> keep_allocated;
  std::map<std::string, int64_t> keep_promised;
  for (const auto& [key, old] : entries_) {
    keep_units[key] = old->units;
    keep_allocated[key] = old->allocated.load();
    keep_promised[key] = old->promised_at_ms;
  }
  holders_.clear();
  for (EntryPtr& e : fresh) {
    const std::string key = Key(e->pod_uid, e->container.name);
    if (auto u = keep_units.find(key); u != keep_units.end()) {
      e->units = u->second;
      e->allocated.store(keep_allocated[key]);
      e->promised_at_ms = keep_promised[key];
    } else if (auto r = restored_.find(key); r != restored_.end()) {
      e->units = r->second;
      e->allocated.store(true);
      restored_.erase(r);
    }
    for (const std::string& u : e->units) holders_[u].push_back(e);
    entries[key] = std::move(e);
  }
  entries_.swap(entries);
  rejected_ = errors;
  return errors;
}

void AssignmentStore::Restore(const std::string& pod_uid, const std::string& container,
                              const std::vector<std::string>& units) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = entries_.find(Key(pod_uid, container));
  if (it == entries_.end()) {
    restored_[Key(pod_uid, container)] = units;
    return;
  }
  SetUnitsLocked(it->second, units);
  it->second->allocated.store(true);
}

std::optional<std::vector<std::string>> AssignmentStore::Prefer(
    const std::vector<std::string>& available, const std::vector<std::string>& must_include,
    int size, int64_t now_ms) {
  // Free units per GPU, in unit order.
  std::map<std::string, std::vector<std::pair<int, std::string>>> by_gpu;
  std::set<std::string> seen;
  for (const auto* list : {&must_include, &available}) {
    for (const std::string& id : *list) {
      if (!seen.insert(id).second) continue;
      auto ref = ParseUnitId(id);
      if (ref) by_gpu[ref->gpu_uuid].emplace_back(ref->unit, id);
    }
  }
  for (auto& [gpu, units] : by_gpu) std::sort(units.begin(), units.end());
  std::set<std::string> must(must_include.begin(), must_include.end());

  std::unique_lock<std::shared_mutex> lock(mu_);
  // Units kubelet must reuse (from an init container) tie the answer to that pod.
  std::string must_pod;
  for (const std::string& u : must) {
    auto it = holders_.find(u);
    if (it != holders_.end() && !it->second.empty()) must_pod = it->second.front()->pod_uid;
  }
  // The units `e` would get, or nullopt when some GPU of `e` has no unit for it.
  auto pick = [&](const AssignmentEntry& e) -> std::optional<std::vector<std::string>> {
    std::vector<std::string> out;
    for (const std::string& gpu : e.gpus) {
      auto free = by_gpu.find(gpu);
      if (free == by_gpu.end()) return std::nullopt;
      const std::string* chosen = nullptr;
      for (const auto& [index, id] : free->second) {
        if (std::binary_search(e.units.begin(), e.units.end(), id)) {
          chosen = &id;  // already promised to e and still available: keep it
          break;
        }
      }
      if (chosen == nullptr) {
        for (const auto& [index, id] : free->second) {
          if (must.count(id)) {
            chosen = &id;
            break;
          }
        }
      }
      if (chosen == nullptr) {
        for (const auto& [index, id] : free->second) {
          if (!HeldByOtherLocked(id, e)) {
            chosen = &id;
            break;
          }
        }
      }
      if (chosen == nullptr) return std::nullopt;
      out.push_back(*chosen);
    }
    for (const std::string& m : must) {
      if (std::find(out.begin(), out.end(), m) == out.end()) return std::nullopt;
    }
    return out;
  };
  EntryPtr best;
  std::vector<std::string> best_units;
  for (const auto& [key, e] : entries_) {
    if (e->allocated.load() || static_cast<int>(e->gpus.size()) != size) continue;
    if (!must_pod.empty() && e->pod_uid != must_pod) continue;
    // A live promise means kubelet is about to allocate this container: offer the next one.
    if (e->promised_at_ms != 0 && now_ms - e->promised_at_ms < promise_ttl_ms_) continue;
    if (best && !Older(*e, *best)) continue;
    auto units = pick(*e);
    if (!units) continue;
    best = e;
    best_units = std::move(*units);
  }
  if (!best) return std::nullopt;
  SetUnitsLocked(best, best_units);
  best->promised_at_ms = now_ms;
  return best->units;
}

Result<std::shared_ptr<const AssignmentEntry>> AssignmentStore::Resolve(
    const std::vector<std::string>& units_in) {
  std::vector<std::string> units = units_in;
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  if (units.empty()) return Status::InvalidArgument("the request names no device");
  std::vector<std::string> gpus;
  for (const std::string& u : units) {
    auto ref = ParseUnitId(u);
    if (!ref) return ref.error();
    gpus.push_back(ref->gpu_uuid);
  }
  std::sort(gpus.begin(), gpus.end());
  if (std::adjacent_find(gpus.begin(), gpus.end()) != gpus.end()) {
    return Status::InvalidArgument("two units of one GPU in one container request (" +
                                   units.front() + ", ...)");
  }
  {
    // The normal path: the units were promised by Prefer() (or allocated before: a retry).
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = holders_.find(units.front());
    if (it != holders_.end()) {
      EntryPtr pending, done;
      for (const EntryPtr& h : it->second) {
        if (h->units != units) continue;
        (h->allocated.load() ? done : pending) = h;
      }
      EntryPtr found = pending ? pending : done;
      if (found) {
        found->allocated.store(true);
        return std::shared_ptr<const AssignmentEntry>(found);
      }
      // Held, but by a container with another set: kubelet mixed units of two containers.
      for (const EntryPtr& h : it->second) {
        return Status::FailedPrecondition("unit " + units.front() + " is held by " + h->Describe() +
                                          " with " + std::to_string(h->units.size()) +
                                          " unit(s); the request has " +
                                          std::to_string(units.size()));
      }
    }
  }
  // Units nobody was promised: give them to the oldest pending container on exactly these GPUs.
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (const std::string& u : units) {
    auto it = holders_.find(u);
    if (it != holders_.end() && !it->second.empty()) {
      return Status::FailedPrecondition("unit " + u + " is held by " +
                                        it->second.front()->Describe());
    }
  }
  EntryPtr best;
  for (const auto& [key, e] : entries_) {
    if (e->allocated.load() || e->gpus != gpus) continue;
    if (!best || Older(*e, *best)) best = e;
  }
  if (!best) {
    std::string why = "no pod on this node is assigned GPU " + gpus.front() +
                      (gpus.size() > 1 ? " (and the other requested GPUs)" : "") +
                      " and still waiting for it";
    // A pod whose assignment does not parse cannot be allocated: say so, as it is most likely
    // the pod kubelet is admitting.
    for (size_t i = 0; i < rejected_.size() && i < 3; ++i) {
      why += (i == 0 ? "; unreadable assignments: " : "; ") + rejected_[i].second;
    }
    if (rejected_.size() > 3) why += "; and " + std::to_string(rejected_.size() - 3) + " more";
    return Status::NotFound(why);
  }
  SetUnitsLocked(best, units);
  best->allocated.store(true);
  return std::shared_ptr<const AssignmentEntry>(best);
}

std::vector<std::shared_ptr<const AssignmentEntry>> AssignmentStore::Holders(
    const std::vector<std::string>& units_in) const {
  std::vector<std::string> units = units_in;
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  std::vector<std::shared_ptr<const AssignmentEntry>> out;
  if (units.empty()) return out;
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = holders_.find(units.front());
  if (it == holders_.end()) return out;
  for (const EntryPtr& h : it->second) {
    if (h->units == units && h->allocated.load()) out.push_back(h);
  }
  return out;
}

size_t AssignmentStore::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return entries_.size();
}

std::set<std::string> AssignmentStore::PodUids() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::set<std::string> out;
  for (const auto& [key, e] : entries_) out.insert(e->pod_uid);
  return out;
}

}  // namespace vgpu::node
