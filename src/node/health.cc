#include "node/health.h"

#include "common/log.h"

namespace vgpu::node {

using faults::GpuHealthMachine;
using faults::HealthAction;
using faults::HealthKey;
using faults::XidClass;

HealthTracker::HealthTracker(std::vector<std::string> uuids, HealthRules rules)
    : rules_(std::move(rules)), uuids_(std::move(uuids)) {
  for (const std::string& u : uuids_) FindLocked(HealthKey{u}, true);
}

HealthTracker::Entry* HealthTracker::FindLocked(const HealthKey& key, bool create) {
  auto it = entries_.find(key);
  if (it != entries_.end()) return &it->second;
  if (!create) return nullptr;
  return &entries_.emplace(key, Entry{GpuHealthMachine(key, &rules_.gpu), {}}).first->second;
}

std::map<HealthKey, bool> HealthTracker::SchedulableLocked() const {
  std::map<HealthKey, bool> out;
  for (const auto& [k, e] : entries_) out[k] = e.machine.Schedulable();
  return out;
}

bool HealthTracker::Changed(const std::map<HealthKey, bool>& before) const {
  for (const auto& [k, e] : entries_) {
    auto it = before.find(k);
    if (it == before.end() ? !e.machine.Schedulable() : it->second != e.machine.Schedulable()) {
      return true;
    }
  }
  return false;
}

XidClass HealthTracker::ClassLocked(const std::string& uuid, uint64_t xid) const {
  if (rules_.sticky_xids.count(xid)) return XidClass::kReboot;
  if (rules_.ignored_xids.count(xid)) return XidClass::kIgnore;
  XidClass table = faults::ClassifyXid(xid);
  auto it = driver_action_.find(uuid);
  std::optional<faults::RecoveryAction> driver;
  if (it != driver_action_.end()) driver = it->second;
  return faults::EffectiveClass(table, driver);
}

XidClass HealthTracker::ClassOf(const std::string& uuid, uint64_t xid) const {
  std::lock_guard<std::mutex> lock(mu_);
  return ClassLocked(uuid, xid);
}

bool HealthTracker::OnEvent(const device::HealthEvent& event, int64_t now_ns, bool attributed) {
  std::lock_guard<std::mutex> lock(mu_);
  auto before = SchedulableLocked();
  using Kind = device::HealthEvent::Kind;
  const std::string count_key =
      std::string(device::HealthEventKindName(event.kind)) + ":" + std::to_string(event.code);
  if (event.uuid.empty()) {
    // The event channel failed: the driver can no longer tell us about faults.
    for (const std::string& u : uuids_) {
      Entry* e = FindLocked(HealthKey{u}, true);
      ++e->events[count_key];
      e->machine.OnSample(false, -1,
                          event.description.empty() ? "health events failed" : event.description,
                          now_ns, &actions_);
    }
    return Changed(before);
  }
  HealthKey key{event.uuid};
  if (event.gpu_instance_id != device::HealthEvent::kNoInstance) {
    key.gpu_instance = event.gpu_instance_id;
    key.compute_instance = event.compute_instance_id;
  }
  Entry* gpu = FindLocked(HealthKey{event.uuid}, false);
  if (gpu == nullptr) return false;  // not a GPU of this node
  Entry* target = FindLocked(key, true);
  ++target->events[count_key];
  if (event.kind == Kind::kXid) gpu->last_xid = event.code;
  switch (event.kind) {
    case Kind::kSingleBitEcc:
      break;
    case Kind::kRecovered:
      target->machine.OnRecovered(
          event.description.empty() ? "recovery reported" : event.description, now_ns, &actions_);
      break;
    case Kind::kDoubleBitEcc:
      target->machine.OnDoubleBitEcc(now_ns, &actions_);
      break;
    case Kind::kRecoveryAction: {
      auto action = faults::RecoveryActionFromValue(event.code);
      if (!action) break;
      auto prev = driver_action_.find(event.uuid);
      const bool was_set =
          prev != driver_action_.end() && prev->second != faults::RecoveryAction::kNone;
      driver_action_[event.uuid] = *action;
      if (*action == faults::RecoveryAction::kNone) {
        if (was_set)
          target->machine.OnRecovered("the driver's recovery action is none again", now_ns,
                                      &actions_);
      } else if (*action == faults::RecoveryAction::kNodeReboot) {
        target->machine.OnXid(154, XidClass::kReboot, now_ns, &actions_);
      } else if (*action != faults::RecoveryAction::kRecoverImexDomain) {
        target->machine.OnXid(154, XidClass::kReset, now_ns, &actions_);
      }
      break;
    }
    case Kind::kXid: {
      XidClass cls = ClassLocked(event.uuid, event.code);
      // Attributed to a process: the tenant's business (tenant_levels.h), not the GPU's.
      if ((event.pid != 0 || attributed) && !faults::IsFatal(cls)) break;
      target->machine.OnXid(event.code, cls, now_ns, &actions_);
      break;
    }
  }
  return Changed(before);
}

bool HealthTracker::OnSample(const std::string& uuid, bool ok, const std::string& error,
                             int64_t now_ns, int processes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto before = SchedulableLocked();
  Entry* e = FindLocked(HealthKey{uuid}, false);
  if (e == nullptr) return false;
  e->machine.OnSample(ok, processes, error, now_ns, &actions_);
  return Changed(before);
}

bool HealthTracker::Tick(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  auto before = SchedulableLocked();
  for (auto& [k, e] : entries_) e.machine.Tick(now_ns, &actions_);
  return Changed(before);
}

bool HealthTracker::OnStuckKernel(const std::string& uuid, const std::string& what, bool first,
                                  int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  auto before = SchedulableLocked();
  Entry* e = FindLocked(HealthKey{uuid}, false);
  if (e == nullptr) return false;
  if (first) ++e->events["stuck-kernel:0"];
  e->machine.OnStuckKernel(what, now_ns, &actions_);
  return Changed(before);
}

bool HealthTracker::OnResetResult(const HealthKey& key, bool ok, const std::string& error,
                                  int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  auto before = SchedulableLocked();
  if (Entry* e = FindLocked(key, false)) e->machine.OnResetResult(ok, error, now_ns, &actions_);
  return Changed(before);
}

bool HealthTracker::OnProbeResult(const HealthKey& key, bool ok, const std::string& error,
                                  int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  auto before = SchedulableLocked();
  if (Entry* e = FindLocked(key, false)) e->machine.OnProbeResult(ok, error, now_ns, &actions_);
  return Changed(before);
}

std::vector<HealthAction> HealthTracker::TakeActions() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HealthAction> out;
  out.swap(actions_);
  return out;
}

bool HealthTracker::Healthy(const std::string& uuid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(HealthKey{uuid});
  return it != entries_.end() && it->second.machine.Schedulable();
}

std::vector<GpuHealth> HealthTracker::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<GpuHealth> out;
  auto add = [&](const HealthKey& k, const Entry& e) {
    const faults::GpuHealthStatus& s = e.machine.status();
    GpuHealth g;
    g.uuid = k.uuid;
    if (!k.whole_gpu()) g.instance = k.ToString().substr(k.uuid.size() + 1);
    g.healthy = e.machine.Schedulable();
    g.state = s.state;
    g.reason = s.reason;
    g.unhealthy_transitions = s.quarantines;
    g.relapses = s.relapses;
    g.events = e.events;
    g.last_xid = e.last_xid;
    out.push_back(std::move(g));
  };
  for (const std::string& u : uuids_) add(HealthKey{u}, entries_.at(HealthKey{u}));
  for (const auto& [k, e] : entries_) {
    if (!k.whole_gpu()) add(k, e);
  }
  return out;
}

Result<std::set<uint64_t>> ParseXidList(const std::string& text) {
  std::set<uint64_t> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty() || item.size() > 6 ||
        item.find_first_not_of("0123456789") != std::string::npos) {
      return Status::InvalidArgument("\"" + item + "\" is not an XID number");
    }
    out.insert(std::stoull(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace vgpu::node
