#include "node/metrics/metrics_faults.h"

#include "node/metrics/metrics_catalog.h"

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
      m.Add(metric::vgpu_gpu_health_state, sl, g.state == s ? 1 : 0);
    }
    m.Add(metric::vgpu_gpu_health_relapses, l, g.relapses);
  }
  for (const faults::TenantStatus& t : tenants) {
    Labels l = {{"node", node_name}, {"slice", t.slice}};
    for (const SliceRecord& r : slices) {
      if (r.name != t.slice) continue;
      l.emplace_back("namespace", r.spec.pod_ns);
      l.emplace_back("pod", r.spec.pod_name);
      l.emplace_back("container", r.spec.container);
    }
    m.Add(metric::vgpu_tenant_quarantine_level, l, static_cast<int>(t.level));
    m.Add(metric::vgpu_tenant_quarantine_strikes, l, t.strikes);
    for (const auto& [signal, count] : t.signals) {
      Labels sl = l;
      sl.emplace_back("signal", signal);
      m.Add(metric::vgpu_tenant_signals_total, sl, static_cast<double>(count));
    }
  }
}

}  // namespace vgpu::node
