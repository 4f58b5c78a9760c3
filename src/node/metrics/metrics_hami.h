// HAMi's metric names, label names and label values on the node daemon's values (part of
// /metrics, with --hami-metric-aliases), so that dashboards and alert rules written for HAMi keep
// working. HAMi splits its series over two processes: the vGPU monitor on each node (the
// hami_host_* and per-container series) and the scheduler (the per-GPU and per-container
// allocation series). Here the node daemon exports both sets for its own node: it knows each
// GPU and each slice on it, and no series is exported twice (`vgpu scheduler` exports none of
// them), so sums over the cluster stay right.
//
// What follows HAMi exactly (cmd/vGPUmonitor/metrics.go and cmd/scheduler/metrics.go of
// Project-HAMi/HAMi; docs/node.md has the table):
//   - names and label names, and the label `zone="vGPU"` that HAMi adds to every one of these
//     series (its collectors are registered under that zone);
//   - `device_type` is "NVIDIA-" followed by the NVML product name;
//   - per container, the monitor's series are keyed by `vdevice_index` (the CUDA index inside
//     the container) and the scheduler's by `container_index` (the container's position in the
//     pod spec; a slice whose pod is not known yet has none of the scheduler's series);
//   - units: HAMi's utilization and core "ratios" are percentages (0..100);
//     hami_node_gpu_memory_allocated_ratio is a fraction (0..1); memory in bytes, except the
//     `device_memory_limit` label of hami_node_gpu_overview (MiB);
//   - hami_gpu_core_limit_ratio is 100 and `device_cores` is "100" (HAMi's default core scaling).
// Where HAMi's own types would fail promtool's lint rules, the type differs (PromQL ignores
// types): hami_gpu_shared_count is `untyped` (a "_count" suffix is reserved for histograms),
// hami_host_gpu_ecc_errors_total a counter (a gauge may not end in "_total").
#pragma once

#include <vector>

#include "node/cluster/cluster.h"
#include "node/metrics/metrics_text.h"

namespace vgpu::node {

// Adds HAMi's series, derived from the vgpu_* families already in `m` (metrics.cc's GPU labels
// node, gpu, uuid, model; slice labels node, namespace, pod, container, gpu, uuid, cuda_index).
// `pods`: the node's pods, for `container_index`.
void AddHamiSeries(MetricsBuilder& m, const std::vector<PodInfo>& pods);

}  // namespace vgpu::node
