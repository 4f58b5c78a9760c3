// The node daemon's /metrics: per GPU, per slice, and the daemon itself, in the Prometheus
// text format. Names follow Prometheus conventions (prefix vgpu_, base units, _bytes, _ratio
// for 0..1 shares, _total for counters); every family is one of node/metrics/metrics_catalog.def,
// and docs/node.md lists them. With `hami_aliases`, HAMi's series are emitted as well (same values,
// HAMi's names and labels; metrics_hami.h); with `dcgm_aliases`, dcgm-exporter's
// (metrics_telemetry.h).
//
// Per-slice numbers come from four places: the slice's limits (slice.json), its accounting
// region (what libvgpu.so charged and counted; when the region exists), the per-GPU compute
// arbiters (the
// GPU time each slice got; metrics_compute.h), and the driver's per-process memory and SM
// share, attributed to a slice through the process's cgroup (pod UID and container ID).
#pragma once

#include <string>

#include "node/cluster/pod_sync.h"
#include "node/faults/tenant_levels.h"
#include "node/inventory.h"
#include "node/node_state.h"
#include "node/plugin/allocator.h"
#include "node/plugin/plugin_runner.h"
#include "node/slice.h"
#include "node/slice_region.h"

namespace vgpu::node {

struct MetricsSources {
  const NodeState* state = nullptr;
  const SliceManager* slices = nullptr;
  const PodSync* pods = nullptr;                  // optional
  const Allocator* allocator = nullptr;           // optional
  const PluginRunner* runner = nullptr;           // optional
  const InventoryPublisher* inventory = nullptr;  // optional
  std::string node_name;
  std::string proc_root = "/proc";
  std::string arbiter_dir;  // the node's arbiter directory ("" = none: no GPU compute series)
  std::string version;
  bool hami_aliases = false;
  bool dcgm_aliases = false;       // dcgm-exporter's names too (metrics_telemetry.h)
  bool health_events = false;      // the backend reports the driver's events (the last XID)
  uint64_t monotonic_now_ns = 0;   // CLOCK_MONOTONIC now (regions' times); 0: read the clock
  RegionCache* regions = nullptr;  // optional: keeps the slices' regions mapped between scrapes
  std::vector<faults::TenantStatus> tenants;  // quarantine levels (metrics_faults.h)
};

std::string CollectMetrics(const MetricsSources& sources);

}  // namespace vgpu::node
