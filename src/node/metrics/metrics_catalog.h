// The node daemon's metric families (node/metrics/metrics_catalog.def, the one list of them): a
// MetricDef constant for each, node::metric::<name> (e.g. metric::vgpu_gpu_info), which is how
// the code names a family when it adds samples, and the list of all of them.
#pragma once

#include <span>

#include "node/metrics/metrics_text.h"

namespace vgpu::node {
namespace metric {
#define VGPU_METRIC(name, type, help) \
  inline constexpr MetricDef name{#name, MetricType::type, help};
#include "node/metrics/metrics_catalog.def"
#undef VGPU_METRIC
}  // namespace metric

// Every family of the list, in its order.
std::span<const MetricDef> AllMetricFamilies();

}  // namespace vgpu::node
