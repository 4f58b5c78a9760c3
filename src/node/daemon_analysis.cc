// The node daemon's online analyses (daemon.h, rules/online_analysis.h, docs/analyze.md): set up at
// Start, fed by each round of the rule engine with what it sampled, reported on /metrics and as
// a Kubernetes Event per new anomaly.
#include <time.h>

#include <chrono>
#include <cstdio>

#include "common/clock.h"
#include "common/log.h"
#include "node/daemon.h"
#include "node/metrics/metrics_catalog.h"
#include "node/metrics/metrics_text.h"
#include "node/rules/online_analysis.h"
#include "node/rules/rule_engine.h"

namespace vgpu::node {
namespace {

std::string MetricName(OnlineMetric m) {
  return m == OnlineMetric::kUtil ? "utilization" : "memory";
}

std::string DescribeAnomaly(const OnlineAnomaly& a, int64_t now_ns) {
  char magnitude[64];
  if (a.anomaly.kind == analyze::AnomalyKind::kLeak) {
    std::snprintf(magnitude, sizeof magnitude, "%.2f GiB/h", a.anomaly.magnitude / (1 << 30));
  } else if (a.anomaly.kind == analyze::AnomalyKind::kStuckZero) {
    std::snprintf(magnitude, sizeof magnitude, "%.0f samples", a.anomaly.magnitude);
  } else {
    std::snprintf(magnitude, sizeof magnitude, "%+.1f points", a.anomaly.magnitude);
  }
  return std::string(analyze::KindName(a.anomaly.kind)) + " in the " + MetricName(a.metric) +
         " of " + a.target + ", started " + std::to_string((now_ns - a.start_ns) / 1'000'000'000) +
         " s ago (" + magnitude + ")";
}

}  // namespace

Status Daemon::StartAnalysis() {
  if (!options_.analyze) return Status::Ok();
  const int64_t step_ns = options_.analyze_step_ms * 1'000'000;
  if (step_ns <= 0) return Status::InvalidArgument("--analyze-step: must be positive");
  if (rules_ && rules_->rules().interval_ns > step_ns) {
    return Status::InvalidArgument("--analyze-step: " + std::to_string(options_.analyze_step_ms) +
                                   " ms is shorter than the rules' evaluation_interval (" +
                                   std::to_string(rules_->rules().interval_ns / 1'000'000) +
                                   " ms), which feeds it");
  }
  const Clock* clock =
      options_.analysis_clock != nullptr ? options_.analysis_clock : &MonotonicClock::Instance();
  if (!rules_) {
    // No rule file: a rule engine without rules samples the node once per step.
    analyze::RuleSet none;
    none.interval_ns = step_ns;
    rules_ = std::make_unique<RuleEngine>(std::move(none), &MonotonicClock::Instance(),
                                          NodeActionHooks{}, false,
                                          static_cast<int>(state_->devices().size()));
  }
  OnlineOptions o;
  o.step_ns = step_ns;
  analysis_ = std::make_unique<OnlineAnalysis>(o, clock);
  rules_->SetSampleObserver([this](const auto& samples) { AnalysisRound(samples); });
  VGPU_LOG_INFO(
      "online analyses: a %lld ms grid, anomalies per slice and GPU, forecasts %zu "
      "steps ahead, right-sizing per slice",
      static_cast<long long>(options_.analyze_step_ms), o.horizon);
  return Status::Ok();
}

void Daemon::AnalysisRound(
    const std::vector<std::tuple<std::string, std::string, double>>& samples) {
  // The device's own utilization where it reports one (NVML's SM activity).
  std::map<int, double> gpu_util;
  const std::vector<std::optional<device::DeviceSample>> device = state_->Samples();
  for (size_t i = 0; i < device.size() && i < state_->devices().size(); ++i) {
    if (device[i] && device[i]->sm_utilization) {
      gpu_util[static_cast<int>(state_->devices()[i].index)] = 100.0 * *device[i]->sm_utilization;
    }
  }
  std::vector<OnlineAnomaly> found;
  int64_t now = 0;
  {
    std::lock_guard<std::mutex> lock(analysis_mu_);
    analysis_->ObserveRound(samples, gpu_util);
    found = analysis_->Round();
    now =
        (options_.analysis_clock != nullptr ? options_.analysis_clock : &MonotonicClock::Instance())
            ->NowNanos();
  }
  for (const OnlineAnomaly& a : found) {
    const std::string what = DescribeAnomaly(a, now);
    VGPU_LOG_WARN("anomaly: %s", what.c_str());
    Status s = cluster_->PostNodeEvent(options_.node_name, "Warning", "VgpuAnomaly", what);
    if (!s.ok()) VGPU_LOG_WARN("node event: %s", s.ToString().c_str());
  }
}

std::string Daemon::AnalysisMetrics() const {
  if (!analysis_) return "";
  std::lock_guard<std::mutex> lock(analysis_mu_);
  const OnlineAnalysis& a = *analysis_;
  MetricsBuilder m;
  const std::string& node = options_.node_name;
  // Clock times as Unix times: now on the wall clock less the age on the analyses' clock.
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  const double wall_now = static_cast<double>(wall.tv_sec) + wall.tv_nsec / 1e9;
  const int64_t now =
      (options_.analysis_clock != nullptr ? options_.analysis_clock : &MonotonicClock::Instance())
          ->NowNanos();
  for (const auto& [key, n] : a.anomaly_counts()) {
    Labels l = {{"node", node}, {"target", key.first}, {"kind", std::string(KindName(key.second))}};
    m.Add(metric::vgpu_anomalies_total, l, static_cast<double>(n));
  }
  for (const auto& [key, last] : a.last_anomalies()) {
    Labels l = {{"node", node}, {"target", key.first}, {"kind", std::string(KindName(key.second))}};
    m.Add(metric::vgpu_anomaly_last_start_timestamp_seconds, l,
          wall_now - static_cast<double>(now - last.start_ns) / 1e9);
  }
  const std::string horizon = std::to_string(
      static_cast<long long>(static_cast<double>(a.options().horizon * a.options().step_ns) / 1e9));
  for (const OnlineForecast& f : a.Forecasts()) {
    Labels l = {{"node", node}};
    if (f.target != "node") l.emplace_back("gpu", f.target.substr(3));
    l.emplace_back("horizon_seconds", horizon);
    m.Add(metric::vgpu_forecast_utilization, l, f.value);
  }
  for (const analyze::Recommendation& r : a.rightsize()) {
    const size_t slash = r.id.find('/');
    Labels l = {
        {"node", node}, {"gpu", r.id.substr(3, slash - 3)}, {"slice", r.id.substr(slash + 1)}};
    m.Add(metric::vgpu_rightsize_memory_bytes, l, r.limit);
    m.Add(metric::vgpu_rightsize_exceed_risk_ratio, l, r.risk);
  }
  m.Add(metric::vgpu_analysis_series, {{"node", node}}, static_cast<double>(a.series()));
  return m.Render();
}

}  // namespace vgpu::node
