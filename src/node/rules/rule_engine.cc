#include "node/rules/rule_engine.h"

#include <algorithm>

#include "common/log.h"
#include "node/metrics/metrics_catalog.h"
#include "shm/arbiter.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"
#include "shm/region_resize.h"

namespace vgpu::node {
namespace {

constexpr int64_t kKeepNs = 3600LL * 1000 * 1000 * 1000;

}  // namespace

RuleEngine::RuleEngine(analyze::RuleSet rules, const Clock* clock, NodeActionHooks hooks,
                       bool dry_run, int gpu_count)
    : rules_(std::move(rules)),
      clock_(clock),
      gpu_count_(gpu_count),
      actions_(std::make_unique<NodeActions>(std::move(hooks), dry_run)),
      evaluator_(std::make_unique<analyze::RuleEvaluator>(rules_, clock, actions_.get())) {}

bool RuleEngine::Rate(const std::string& key, double total, int64_t now, double* rate) {
  auto it = previous_.find(key);
  bool ok = false;
  if (it != previous_.end() && now > it->second.t_ns && total >= it->second.value) {
    *rate = (total - it->second.value) * 1e9 / static_cast<double>(now - it->second.t_ns);
    ok = true;
  }
  previous_[key] = {now, total};
  return ok;
}

std::vector<RuleEngine::Signal> RuleEngine::Sample(const RuleInputs& in) {
  const int64_t now = clock_->NowNanos();
  std::vector<Signal> out;
  std::map<int, int> per_gpu;
  for (const SliceRecord& r : in.slices) {
    if (r.spec.devices.empty()) continue;
    const SliceDevice& first = r.spec.devices.front();
    ++per_gpu[first.node_index];
    const std::string target = "gpu" + std::to_string(first.node_index) + "/" + r.name;
    shm::Mapping m;
    if (shm::Mapping::OpenExisting(r.region_path.c_str(), false, &m) != shm::RegionError::kOk) {
      continue;
    }
    const shm::Region* region = m.region();
    const int devices = static_cast<int>(region->header.config.device_count);
    double used = 0, limit = 0;
    bool limited = false;
    for (int d = 0; d < devices; ++d) {
      used += static_cast<double>(shm::DeviceUsed(region, d));
      uint64_t l = shm::MemoryLimitInForce(region, d);
      if (l != shm::kNoLimit) {
        limit += static_cast<double>(l);
        limited = true;
      }
    }
    out.emplace_back(target, "memory_used_bytes", used);
    if (limited) out.emplace_back(target, "memory_limit_bytes", limit);
    double rate = 0;
    if (Rate(target + "|oom",
             static_cast<double>(shm::LoadU64(region->header.control.oom_refusals)), now, &rate)) {
      out.emplace_back(target, "oom_refusals_per_s", rate);
    }
    // Copy traffic from the slice's exact counters (region.h telemetry), where libvgpu counts.
    shm::SliceCounters counters;
    const bool counted = shm::ReadSliceCounters(region, &counters) && counters.counting;
    if (counted) {
      const double h2d =
          static_cast<double>(counters.totals.copy_bytes[shm::kCopyKindHostToDevice]);
      const double d2h =
          static_cast<double>(counters.totals.copy_bytes[shm::kCopyKindDeviceToHost]);
      double h2d_rate = 0, d2h_rate = 0;
      const bool h = Rate(target + "|h2d", h2d, now, &h2d_rate);
      const bool d = Rate(target + "|d2h", d2h, now, &d2h_rate);
      if (h) out.emplace_back(target, "h2d_bytes_per_s", h2d_rate);
      if (d) out.emplace_back(target, "d2h_bytes_per_s", d2h_rate);
      if (h && d) out.emplace_back(target, "copy_bytes_per_s", h2d_rate + d2h_rate);
    }
    uint32_t sm = shm::SmLimitInForce(region, 0);
    out.emplace_back(target, "share_percent", sm == 0 ? 100.0 : static_cast<double>(sm));
    out.emplace_back(target, "best_effort",
                     shm::PriorityInForce(region) >= shm::kPriorityLow ? 1.0 : 0.0);
    auto a = in.arbiters.find(first.uuid);
    const ArbiterSliceUsage* u = nullptr;
    if (a != in.arbiters.end() && a->second.error.empty()) {
      u = a->second.Find(SliceKeyOf(r.region_path));
    }
    if (u != nullptr) {
      out.emplace_back(target, "util", 100.0 * u->achieved);
      if (Rate(target + "|kernels", static_cast<double>(u->kernels), now, &rate)) {
        out.emplace_back(target, "launches_per_s", rate);
      }
      if (Rate(target + "|held", static_cast<double>(u->held_ns), now, &rate)) {
        out.emplace_back(target, "gate_wait_ratio", rate / 1e9);
      }
    } else if (counted) {
      // Not in an arbiter (a slice alone on its GPU never joins one): launches and busy time
      // from the slice's exact counters, per second since the last round.
      if (Rate(target + "|launches", static_cast<double>(counters.totals.launches), now, &rate)) {
        out.emplace_back(target, "launches_per_s", rate);
      }
      if (Rate(target + "|busy", static_cast<double>(counters.totals.busy_ns), now, &rate)) {
        out.emplace_back(target, "util", 100.0 * rate / 1e9);
      }
    }
  }
  for (int g = 0; g < gpu_count_; ++g) {
    const std::string target = "gpu" + std::to_string(g);
    out.emplace_back(target, "slices", per_gpu.count(g) ? per_gpu[g] : 0);
    auto x = in.xid_totals.find(g);
    const double total = x == in.xid_totals.end() ? 0.0 : static_cast<double>(x->second);
    auto prev = previous_.find(target + "|xid");
    if (prev != previous_.end() && total >= prev->second.value) {
      out.emplace_back(target, "xid_errors", total - prev->second.value);  // since the last round
    }
    previous_[target + "|xid"] = {now, total};
    auto d = in.gpu_samples.find(g);
    if (d != in.gpu_samples.end()) SampleDevice(target, d->second, now, &out);
  }
  return out;
}

void RuleEngine::SampleDevice(const std::string& target, const device::DeviceSample& d, int64_t now,
                              std::vector<Signal>* out) {
  if (d.sm_utilization) out->emplace_back(target, "gpu_util", 100.0 * *d.sm_utilization);
  if (d.gpm) {
    if (d.gpm->dram_activity) {
      out->emplace_back(target, "dram_bw_util", 100.0 * *d.gpm->dram_activity);
    }
    if (d.gpm->nvlink_transmit_bytes_per_second) {
      out->emplace_back(target, "nvlink_tx_bytes_per_s", *d.gpm->nvlink_transmit_bytes_per_second);
    }
    if (d.gpm->nvlink_receive_bytes_per_second) {
      out->emplace_back(target, "nvlink_rx_bytes_per_s", *d.gpm->nvlink_receive_bytes_per_second);
    }
  }
  bool counted = false;
  double replays = 0;
  for (const device::NvLinkLinkSample& l : d.nvlink_links) {
    if (!l.replay_errors_total) continue;
    counted = true;
    replays += static_cast<double>(*l.replay_errors_total);
  }
  double rate = 0;
  if (counted && Rate(target + "|nvlink_replays", replays, now, &rate)) {
    out->emplace_back(target, "nvlink_replays_per_s", rate);
  }
}

void RuleEngine::Round(const RuleInputs& in) {
  const int64_t now = clock_->NowNanos();
  const std::vector<Signal> samples = Sample(in);
  if (observer_) observer_(samples);
  for (const auto& [target, signal, v] : samples) {
    VGPU_LOG_DEBUG("rule signal %s %s %g", target.c_str(), signal.c_str(), v);
    kept_.push_back({target, signal, now, v});
  }
  kept_.erase(std::remove_if(kept_.begin(), kept_.end(),
                             [&](const Kept& k) { return k.t_ns < now - kKeepNs; }),
              kept_.end());
  analyze::SignalStore store;
  for (const Kept& k : kept_) store.Add(k.target, k.signal, k.t_ns, k.v);
  evaluator_->Evaluate(store);
  actions_->Renew();
  rounds_.fetch_add(1, std::memory_order_relaxed);
}

void RuleEngine::AddMetrics(MetricsBuilder& m) const {
  m.Add(metric::vgpu_rule_evaluations_total, {},
        static_cast<double>(rounds_.load(std::memory_order_relaxed)));
  actions_->AddMetrics(m);
}

}  // namespace vgpu::node
