#include "node/metrics/metrics_catalog.h"

namespace vgpu::node {
namespace {

constexpr MetricDef kAll[] = {
#define VGPU_METRIC(name, type, help) metric::name,
#include "node/metrics/metrics_catalog.def"
#undef VGPU_METRIC
};

}  // namespace

std::span<const MetricDef> AllMetricFamilies() { return kAll; }

}  // namespace vgpu::node
