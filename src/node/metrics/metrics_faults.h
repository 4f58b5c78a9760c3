// The fault series of /metrics (part of metrics.cc), names in docs/faults.md:
//   vgpu_gpu_health_state{mig_instance,state} 1 for the state the GPU (or MIG instance: label
//                                             mig_instance "gi1/ci0", "" for the GPU) is in
//   vgpu_gpu_health_relapses                  quarantines soon after a recovery (hysteresis)
//   vgpu_tenant_quarantine_level              0 normal, 1 warn, 2 limit, 3 pause, 4 terminate
//   vgpu_tenant_quarantine_strikes            strikes counted towards the levels
//   vgpu_tenant_signals_total{signal}         attributed signals (xid, launch-failure, ...)
#pragma once

#include <string>
#include <vector>

#include "node/faults/tenant_levels.h"
#include "node/health.h"
#include "node/metrics/metrics_text.h"
#include "node/slice.h"

namespace vgpu::node {

void AddFaultMetrics(MetricsBuilder& m, const std::string& node_name,
                     const std::vector<GpuHealth>& health,
                     const std::vector<faults::TenantStatus>& tenants,
                     const std::vector<SliceRecord>& slices);

}  // namespace vgpu::node
