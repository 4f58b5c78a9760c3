#include "node/metrics/metrics_compute.h"

#include <algorithm>

#include "node/metrics/metrics_catalog.h"

namespace vgpu::node {
namespace {

bool Elastic(const ContainerSlice& spec) {
  if (!spec.compute.mode.empty()) return spec.compute.mode == "elastic";
  return spec.compute.guarantee >= 0;
}

}  // namespace

int EffectiveGuarantee(const ContainerSlice& spec, size_t cuda_index) {
  if (cuda_index >= spec.devices.size()) return 0;
  int cores = spec.devices[cuda_index].cores;
  const int max = cores <= 0 || cores >= 100 ? 100 : cores;
  if (!Elastic(spec)) return max < 100 ? max : 0;
  return std::min(std::max(spec.compute.guarantee, 0), max);
}

void AddSliceComputeMetrics(MetricsBuilder& m, const Labels& l, const SliceRecord& slice,
                            size_t cuda_index, const ArbiterUsage* arbiter,
                            std::optional<double> region_idle_seconds) {
  const ContainerSlice& spec = slice.spec;
  m.Add(metric::vgpu_slice_compute_guarantee_ratio, l,
        EffectiveGuarantee(spec, cuda_index) / 100.0);
  Labels info = l;
  info.emplace_back("mode", Elastic(spec) ? "elastic" : "capped");
  info.emplace_back("priority", shm::PriorityName(spec.Level()));
  info.emplace_back("arbitrated", slice.arbitrated ? "true" : "false");
  m.Add(metric::vgpu_slice_compute_info, info, 1);
  m.Add(metric::vgpu_slice_compute_weight, l, spec.compute.weight > 0 ? spec.compute.weight : 1);
  if (region_idle_seconds.has_value()) {
    m.Add(metric::vgpu_slice_compute_idle_seconds, l, *region_idle_seconds);
  }
  if (arbiter == nullptr || !arbiter->error.empty() || !slice.arbitrated) return;
  const ArbiterSliceUsage* s = arbiter->Find(SliceKeyOf(slice.region_path));
  // A slice without a record has not launched gated work on this GPU: it got no time from the
  // arbiter (the record appears at its first launch and goes when its last process exits).
  m.Add(metric::vgpu_slice_compute_achieved_ratio, l, s != nullptr ? s->achieved : 0.0);
  if (s == nullptr) return;
  m.Add(metric::vgpu_slice_compute_seconds_total, l, static_cast<double>(s->used_ns) / 1e9);
  m.Add(metric::vgpu_slice_compute_wait_seconds_total, l, static_cast<double>(s->held_ns) / 1e9);
  m.Add(metric::vgpu_slice_kernels_total, l, static_cast<double>(s->kernels));
  m.Add(metric::vgpu_slice_compute_preemptions_total, l, static_cast<double>(s->preempted));
  m.Add(metric::vgpu_slice_compute_processes, l, s->members);
  if (s->idle_seconds >= 0 && !region_idle_seconds.has_value()) {
    m.Add(metric::vgpu_slice_compute_idle_seconds, l, s->idle_seconds);
  }
}

void AddGpuComputeMetrics(MetricsBuilder& m, const Labels& l, const ArbiterUsage& arbiter) {
  if (!arbiter.error.empty()) return;
  double achieved = 0;
  int active = 0;
  for (const ArbiterSliceUsage& s : arbiter.slices) {
    achieved += s.achieved;
    if (s.members > 0) ++active;
  }
  m.Add(metric::vgpu_gpu_compute_arbitrated_slices, l, active);
  m.Add(metric::vgpu_gpu_compute_achieved_ratio, l, achieved);
  m.Add(metric::vgpu_gpu_compute_turns_total, l, static_cast<double>(arbiter.turns));
  m.Add(metric::vgpu_gpu_compute_preemptions_total, l, static_cast<double>(arbiter.preemptions));
}

}  // namespace vgpu::node
