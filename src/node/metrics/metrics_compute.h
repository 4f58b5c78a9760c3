// The compute-sharing series of /metrics (part of metrics.cc): per slice and GPU, the share
// configured (from the slice) and the share achieved (from the GPU's arbiter,
// node/arbiter_usage.h); per GPU, the arbiter's turns and the time it gave out. Names in
// docs/node.md.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "node/arbiter_usage.h"
#include "node/metrics/metrics_text.h"
#include "node/slice.h"

namespace vgpu::node {

// The guarantee libvgpu.so applies to device `cuda_index` of `spec`, percent: a capped slice's
// guarantee is its max (none when the max is 100), an elastic one's is at most its max.
int EffectiveGuarantee(const ContainerSlice& spec, size_t cuda_index);

// Series of one slice on one GPU (labels `l`: the slice labels of metrics.cc). `arbiter` is the
// GPU's arbiter (nullptr when the slice's arbiter directory is not the node's).
// vgpu_slice_compute_idle_seconds: `region_idle_seconds` when set (the seconds since the slice's
// last gated launch, from its accounting region, which keeps it after its processes exit), else
// the arbiter's (while the slice has a record there, i.e. live processes).
void AddSliceComputeMetrics(MetricsBuilder& m, const Labels& l, const SliceRecord& slice,
                            size_t cuda_index, const ArbiterUsage* arbiter,
                            std::optional<double> region_idle_seconds = std::nullopt);

// Series of one GPU's arbiter (labels `l`: the GPU labels of metrics.cc).
void AddGpuComputeMetrics(MetricsBuilder& m, const Labels& l, const ArbiterUsage& arbiter);

}  // namespace vgpu::node
