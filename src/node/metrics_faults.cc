#include "node/metrics_faults.h"

namespace vgpu::node {

void AddFaultMetrics(MetricsBuilder& m, const std::string& node_name,
                     const std::vector<GpuHealth>& health,
                     const std::vector<faults::TenantStatus>& tenants,
                     const std::vector<SliceRecord>& slices) {
  using faults::GpuState;
  for (const GpuHealth& g : health) {
    Labels l = {{"node", node_name}, {"uuid", g.uuid}, {"mig_instance", g.instance}};
    for (GpuState s : {GpuState::kHealthy, GpuState::kSuspect, GpuState::kQuarantined,
                       GpuState::kResetPending, GpuState::kProbation}) {
      Labels sl = l;
      sl.emplace_back("state", faults::GpuStateName(s));
      m.Add("vgpu_gpu_health_state", MetricType::kGauge,
            "1 for the health state the GPU (or MIG instance) is in (docs/faults.md)", sl,
            g.state == s ? 1 : 0);
    }
    m.Add("vgpu_gpu_health_relapses", MetricType::kGauge,
          "Quarantines in a row soon after a recovery (each doubles the next probation)", l,
          g.relapses);
  }
  for (const faults::TenantStatus& t : tenants) {
    Labels l = {{"node", node_name}, {"slice", t.slice}};
    for (const SliceRecord& r : slices) {
      if (r.name != t.slice) continue;
      l.emplace_back("namespace", r.spec.pod_ns);
      l.emplace_back("pod", r.spec.pod_name);
      l.emplace_back("container", r.spec.container);
    }
    m.Add("vgpu_tenant_quarantine_level", MetricType::kGauge,
          "Quarantine level of the tenant: 0 normal, 1 warn, 2 limit, 3 pause, 4 terminate", l,
          static_cast<int>(t.level));
    m.Add("vgpu_tenant_quarantine_strikes", MetricType::kGauge,
          "Strikes counted towards the tenant's quarantine levels", l, t.strikes);
    for (const auto& [signal, count] : t.signals) {
      Labels sl = l;
      sl.emplace_back("signal", signal);
      m.Add("vgpu_tenant_signals_total", MetricType::kCounter,
            "Signals attributed to the tenant (xid, launch-failure, oom-storm, memory-ramp, "
            "stuck-kernel, thrash)",
            sl, static_cast<double>(count));
    }
  }
}

}  // namespace vgpu::node
