// The slices' exact counters on /metrics, and dcgm-exporter's metric names as aliases.
//
// AddSliceCounterMetrics: what libvgpu.so counted for one slice in its accounting region
// (node/slice_region.h SliceCounterValues; docs/telemetry.md lists the names and each
// counter's error). `labels` name the slice (node, namespace, pod, container; and the GPU, with
// dcgm-exporter's MIG labels GPU_I_PROFILE / GPU_I_ID, when the slice has one device).
//
// AddGpmMetrics: the GPU's GPM metrics (Hopper and later; device/nvml_gpm.h), per GPU and per
// MIG instance.
//
// AddDcgmAliases: device and slice series that dcgm-exporter also exports, under its names,
// units and labels (gpu, UUID, device, modelName, Hostname; pod, namespace, container on slice
// series, as dcgm-exporter's --kubernetes-virtual-gpus gives them; GPU_I_PROFILE / GPU_I_ID on
// MIG instances). Built from the families already in `m`; adds nothing for absent ones.
#pragma once

#include "device/device_backend.h"
#include "node/metrics/metrics_text.h"
#include "node/slice_region.h"

namespace vgpu::node {

void AddSliceCounterMetrics(MetricsBuilder& m, const Labels& labels, const SliceCounterValues& c);

// The slice's highest charge on one GPU (labels of the slice on that GPU).
void AddSlicePeakMetric(MetricsBuilder& m, const Labels& labels, uint64_t peak_bytes);

// GPM metrics of a GPU or of a MIG instance (`labels` of the GPU, plus GPU_I_PROFILE /
// GPU_I_ID for an instance): vgpu_gpu_gpm_*; unset metrics are not written.
void AddGpmMetrics(MetricsBuilder& m, const Labels& labels, const device::GpmMetrics& g);

void AddDcgmAliases(MetricsBuilder& m);

}  // namespace vgpu::node
