// The node daemon's tuning rules (daemon.h, rules/rule_engine.h): loading the rule file at Start,
// the evaluation loop, and what one round reads (slices, arbiters, XID counts, device samples).
#include <algorithm>

#include "common/clock.h"
#include "common/log.h"
#include "node/arbiter_usage.h"
#include "node/daemon.h"
#include "node/rules/rule_engine.h"

namespace vgpu::node {

Status Daemon::StartRules() {
  if (options_.rules_file.empty()) return Status::Ok();
  Result<analyze::RuleSet> rules = analyze::LoadRules(options_.rules_file);
  if (!rules) return rules.error().WithContext("--rules");
  NodeActionHooks hooks;
  hooks.slices = &slices_;
  hooks.cluster = cluster_;
  hooks.node_name = options_.node_name;
  hooks.quarantine = quarantine_.get();
  hooks.cordon_gpu = [this](int index, bool cordon, const std::string& reason) {
    if (index < 0 || index >= static_cast<int>(state_->devices().size())) {
      return Status::NotFound("no GPU " + std::to_string(index));
    }
    VGPU_LOG_WARN("GPU %d %s by %s", index, cordon ? "cordoned" : "uncordoned", reason.c_str());
    state_->SetCordoned(state_->devices()[static_cast<size_t>(index)].uuid, cordon);
    inventory_dirty_.store(true);
    return Status::Ok();
  };
  VGPU_LOG_INFO("tuning rules: %zu rule(s) from %s, every %lld ms%s", rules->rules.size(),
                options_.rules_file.c_str(), static_cast<long long>(rules->interval_ns / 1'000'000),
                options_.rules_dry_run ? " (dry run: actions are logged, not taken)" : "");
  rules_clock_.AdvanceTo(MonotonicClock::Instance().NowNanos());
  rules_ = std::make_unique<RuleEngine>(std::move(*rules), &rules_clock_, std::move(hooks),
                                        options_.rules_dry_run,
                                        static_cast<int>(state_->devices().size()));
  return Status::Ok();
}

void Daemon::RulesNow() { RulesRound(MonotonicClock::Instance().NowNanos()); }

void Daemon::RulesRound(int64_t scheduled_ns) {
  if (!rules_) return;
  std::lock_guard<std::mutex> lock(rules_mu_);
  rules_clock_.AdvanceTo(scheduled_ns);
  RuleInputs in;
  in.slices = slices_.List();
  std::vector<std::string> uuids;
  for (const device::DeviceInfo& d : state_->devices()) uuids.push_back(d.uuid);
  if (!options_.slices.arbiter_dir.empty()) {
    in.arbiters = ReadArbiters(options_.slices.arbiter_dir, uuids);
  }
  for (const GpuHealth& h : state_->health().Snapshot()) {
    const device::DeviceInfo* d = state_->FindByUuid(h.uuid);
    if (d == nullptr) continue;
    uint64_t xids = 0;
    for (const auto& [kind, n] : h.events) {
      if (kind.rfind("xid:", 0) == 0) xids += n;
    }
    in.xid_totals[static_cast<int>(d->index)] += xids;
  }
  // The sampler's latest sample of each GPU (by NVML index): utilization, GPM, NVLink counters.
  const std::vector<std::optional<device::DeviceSample>> samples = state_->Samples();
  for (size_t i = 0; i < samples.size(); ++i) {
    if (samples[i]) in.gpu_samples[static_cast<int>(i)] = *samples[i];
  }
  rules_->Round(in);
}

// Rounds on a fixed period, each evaluated at its scheduled time (the time a round takes, or how
// late its thread wakes, stretches neither the interval nor a `for:`); a round that ran past the
// next one's time is followed at once, missed ones are skipped.
void Daemon::RulesLoop() {
  const int64_t period = std::max<int64_t>(10'000'000, rules_->rules().interval_ns);
  const Clock& clock = MonotonicClock::Instance();
  int64_t next = clock.NowNanos() + period;
  for (;;) {
    const int64_t wait_ms = std::max<int64_t>(0, (next - clock.NowNanos()) / 1'000'000);
    if (WaitStop(static_cast<int>(wait_ms))) return;
    RulesRound(next);
    next += period;
    if (const int64_t now = clock.NowNanos(); next < now) next = now;
  }
}

std::string Daemon::RulesMetrics() const {
  if (!rules_) return "";
  MetricsBuilder m;
  rules_->AddMetrics(m);
  return m.Render();
}

}  // namespace vgpu::node
