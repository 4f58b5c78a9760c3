#include "node/metrics_compute.h"

#include <algorithm>

namespace vgpu::node {
namespace {

constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kCounter = MetricType::kCounter;

bool Elastic(const SliceSpec& spec) {
  if (!spec.compute.mode.empty()) return spec.compute.mode == "elastic";
  return spec.compute.guarantee >= 0;
}

}  // namespace

int EffectiveGuarantee(const SliceSpec& spec, size_t cuda_index) {
  if (cuda_index >= spec.devices.size()) return 0;
  int cores = spec.devices[cuda_index].cores;
  const int max = cores <= 0 || cores >= 100 ? 100 : cores;
  if (!Elastic(spec)) return max < 100 ? max : 0;
  return std::min(std::max(spec.compute.guarantee, 0), max);
}

void AddSliceComputeMetrics(MetricsBuilder& m, const Labels& l, const SliceRecord& slice,
                            size_t cuda_index, const ArbiterUsage* arbiter) {
  const SliceSpec& spec = slice.spec;
  m.Add("vgpu_slice_compute_guarantee_ratio", kGauge,
        "Compute share reserved for the slice whenever it has work (1 = the whole GPU)", l,
        EffectiveGuarantee(spec, cuda_index) / 100.0);
  Labels info = l;
  info.emplace_back("mode", Elastic(spec) ? "elastic" : "capped");
  info.emplace_back("priority", LevelName(spec.Level()));
  info.emplace_back("arbitrated", slice.arbitrated ? "true" : "false");
  m.Add("vgpu_slice_compute_info", kGauge,
        "The slice's compute mode and priority level as labels (value 1); arbitrated=true when "
        "its launches are gated by the GPU's arbiter",
        info, 1);
  m.Add("vgpu_slice_compute_weight", kGauge,
        "Weight of the slice in sharing spare GPU time among slices of the same rank", l,
        spec.compute.weight > 0 ? spec.compute.weight : 1);
  if (arbiter == nullptr || !arbiter->error.empty() || !slice.arbitrated) return;
  const ArbiterSliceUsage* s = arbiter->Find(SliceKeyOf(slice.region_path));
  // A slice without a record has not launched gated work on this GPU: it got no time from the
  // arbiter (the record appears at its first launch and goes when its last process exits).
  m.Add("vgpu_slice_compute_achieved_ratio", kGauge,
        "Share of the GPU's time the slice's kernels got over the last second, measured by the "
        "GPU's compute arbiter (1 = the whole GPU)",
        l, s != nullptr ? s->achieved : 0.0);
  if (s == nullptr) return;
  m.Add("vgpu_slice_compute_seconds_total", kCounter,
        "GPU time of the slice's kernels since its arbiter record was created", l,
        static_cast<double>(s->used_ns) / 1e9);
  m.Add("vgpu_slice_compute_wait_seconds_total", kCounter,
        "Time the slice's launches waited for their turn on the GPU", l,
        static_cast<double>(s->held_ns) / 1e9);
  m.Add("vgpu_slice_kernels_total", kCounter, "Kernel launches of the slice admitted on the GPU", l,
        static_cast<double>(s->kernels));
  m.Add("vgpu_slice_compute_preemptions_total", kCounter,
        "Turns the slice lost early to a more important slice", l,
        static_cast<double>(s->preempted));
  m.Add("vgpu_slice_compute_processes", kGauge,
        "Processes of the slice that joined the GPU's arbiter", l, s->members);
  if (s->idle_seconds >= 0) {
    m.Add("vgpu_slice_compute_idle_seconds", kGauge,
          "Seconds since the slice's last kernel launch on the GPU", l, s->idle_seconds);
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
  m.Add("vgpu_gpu_compute_arbitrated_slices", kGauge,
        "Slices with live processes in the GPU's compute arbiter", l, active);
  m.Add("vgpu_gpu_compute_achieved_ratio", kGauge,
        "Share of the GPU's time the arbiter gave to slices over the last second", l, achieved);
  m.Add("vgpu_gpu_compute_turns_total", kCounter, "Turns the GPU's compute arbiter granted", l,
        static_cast<double>(arbiter.turns));
  m.Add("vgpu_gpu_compute_preemptions_total", kCounter,
        "Turns ended early for a more important slice", l,
        static_cast<double>(arbiter.preemptions));
}

}  // namespace vgpu::node
