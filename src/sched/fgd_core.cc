#include "sched/fgd_core.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sched/gpu_scratch.h"
#include "sched/policies.h"

namespace vgpu::sched {
namespace {

int64_t SigmoidScore(double delta) {
  return static_cast<int64_t>(1.0 / (1.0 + std::exp(-delta / 1000.0)) * 100.0);
}

// Sum of |w_a - w_b| over the union of specs (missing = 0), and whether the spec sets differ.
double WeightDistance(std::span<const WorkloadSpec> a, std::span<const WorkloadSpec> b) {
  auto key = [](const WorkloadSpec& s) {
    return std::make_tuple(s.cpu_milli, s.gpu_milli, s.num_gpus, s.models.bits());
  };
  std::map<decltype(key(a[0])), std::pair<double, double>> merged;
  for (const WorkloadSpec& s : a) merged[key(s)].first += s.weight;
  for (const WorkloadSpec& s : b) merged[key(s)].second += s.weight;
  double d = 0;
  for (const auto& [k, w] : merged) d += std::fabs(w.first - w.second);
  return d;
}

}  // namespace

FgdCore::FgdCore(std::vector<WorkloadSpec> workload) : model_(workload) {}

FgdCore::FgdCore(FgdOnlineOptions options, const ModelRegistry* names)
    : online_(true), options_(options), names_(names) {}

void FgdCore::Observe(const PodRequest& r) {
  if (!online_) return;
  counter_.Add(r);
  if (counter_.total() >= next_check_) MaybeAdopt();
}

void FgdCore::MaybeAdopt() {
  const int64_t seen = counter_.total();
  next_check_ =
      seen +
      std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(seen) * options_.check_growth));
  std::vector<WorkloadSpec> learned = counter_.Typical(names_, options_.coverage);
  const auto current = model_.workload();
  bool adopt = current.empty();
  if (!adopt) {
    bool same_specs = learned.size() == current.size();
    adopt = !same_specs || WeightDistance(learned, current) > options_.tolerance;
  }
  if (!adopt) return;
  model_ = FragModel(learned);
  ++epoch_;
  ++adoptions_;
}

double FgdCore::FragNow(const Cluster& c, NodeId n) {
  return frag_now_.Get(c, n, epoch_, [&] { return model_.NodeFrag(c, n); });
}

int64_t FgdCore::Evaluate(const PodRequest& r, const Cluster& c, NodeId n, GpuSet* gpus) {
  const double before = FragNow(c, n);
  GpuScratch g(c.gpus(n));
  int32_t* const free = g.free;
  const int64_t cpu_after = c.cpu_free(n) - r.cpu_milli;
  const std::span<const int32_t> free_span = g.free_milli();
  const std::span<const ModelId> model_span = g.model_ids();
  if (r.IsSharing()) {
    int64_t best = -1;
    int choice = -1;
    for (size_t i = 0; i < g.count; ++i) {
      if (!Cluster::GpuFits(r, g.state[i], FitOptions{})) continue;
      if (g.LikeAnEarlierFit(r, i)) continue;
      free[i] -= r.gpu_milli;
      const double after = model_.NodeFrag(cpu_after, free_span, model_span);
      free[i] += r.gpu_milli;
      const int64_t s = SigmoidScore(before - after);
      if (s > best) {
        best = s;
        choice = static_cast<int>(i);
      }
    }
    if (gpus != nullptr) *gpus = choice < 0 ? 0 : GpuSet{1} << choice;
    return std::max<int64_t>(best, 0);
  }
  const GpuSet take = r.num_gpus == 0 ? 0 : SelectBestFitGpus(r, c, n, FitOptions{});
  ForEachGpu(take, [&](int i) { free[i] -= r.gpu_milli; });
  const double after = model_.NodeFrag(cpu_after, free_span, model_span);
  if (gpus != nullptr) *gpus = take;
  return SigmoidScore(before - after);
}

}  // namespace vgpu::sched
