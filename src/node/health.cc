#include "node/health.h"

#include "common/log.h"

namespace vgpu::node {

HealthTracker::HealthTracker(std::vector<std::string> uuids, HealthRules rules)
    : rules_(std::move(rules)) {
  for (std::string& u : uuids) {
    GpuHealth g;
    g.uuid = std::move(u);
    gpus_.push_back(std::move(g));
  }
}

bool HealthTracker::MarkUnhealthy(GpuHealth& g, const std::string& reason, bool sticky,
                                  int64_t now_ns) {
  g.last_fault_ns = now_ns;
  g.sticky = g.sticky || sticky;
  if (!g.healthy) {
    g.reason = reason;
    return false;
  }
  g.healthy = false;
  g.reason = reason;
  ++g.unhealthy_transitions;
  VGPU_LOG_WARN("GPU %s is unhealthy: %s", g.uuid.c_str(), reason.c_str());
  return true;
}

bool HealthTracker::OnEvent(const device::HealthEvent& event, int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = false;
  const std::string key =
      std::string(device::HealthEventKindName(event.kind)) + ":" + std::to_string(event.code);
  for (GpuHealth& g : gpus_) {
    if (!event.uuid.empty() && g.uuid != event.uuid) continue;
    ++g.events[key];
    switch (event.kind) {
      case device::HealthEvent::Kind::kSingleBitEcc:
        break;
      case device::HealthEvent::Kind::kRecovered:
        if (!g.healthy) {
          g.healthy = true;
          g.sticky = false;
          g.reason.clear();
          changed = true;
          VGPU_LOG_WARN("GPU %s is healthy again (recovery reported)", g.uuid.c_str());
        }
        break;
      case device::HealthEvent::Kind::kDoubleBitEcc:
        changed |= MarkUnhealthy(g, "double-bit ECC error", false, now_ns);
        break;
      case device::HealthEvent::Kind::kXid:
        if (event.uuid.empty()) {
          changed |= MarkUnhealthy(
              g, event.description.empty() ? "health events failed" : event.description, false,
              now_ns);
        } else if (!rules_.ignored_xids.count(event.code)) {
          changed |= MarkUnhealthy(g, "XID " + std::to_string(event.code),
                                   rules_.sticky_xids.count(event.code) > 0, now_ns);
        }
        break;
    }
  }
  return changed;
}

bool HealthTracker::OnSample(const std::string& uuid, bool ok, const std::string& error,
                             int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  for (GpuHealth& g : gpus_) {
    if (g.uuid != uuid) continue;
    if (ok) {
      g.last_ok_sample_ns = now_ns;
      return false;
    }
    return MarkUnhealthy(g, "does not answer: " + error, false, now_ns);
  }
  return false;
}

bool HealthTracker::Tick(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = false;
  const int64_t window = rules_.recovery_seconds * 1'000'000'000LL;
  for (GpuHealth& g : gpus_) {
    if (g.healthy || g.sticky) continue;
    if (now_ns - g.last_fault_ns < window) continue;
    if (g.last_ok_sample_ns <= g.last_fault_ns) continue;
    g.healthy = true;
    VGPU_LOG_WARN("GPU %s is healthy again: no fault for %lld s (last: %s)", g.uuid.c_str(),
                  static_cast<long long>(rules_.recovery_seconds), g.reason.c_str());
    g.reason.clear();
    changed = true;
  }
  return changed;
}

bool HealthTracker::Healthy(const std::string& uuid) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const GpuHealth& g : gpus_) {
    if (g.uuid == uuid) return g.healthy;
  }
  return false;
}

std::vector<GpuHealth> HealthTracker::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gpus_;
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
