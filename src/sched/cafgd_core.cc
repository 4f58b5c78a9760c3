#include "sched/cafgd_core.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <tuple>

#include "sched/gpu_scratch.h"
#include "sched/policies.h"

namespace vgpu::sched {
namespace {

constexpr int64_t kSecondary = kCafgdTieScale;

// Sum of |w_a - w_b| over the union of specs (missing = 0).
double WeightDistance(const std::vector<WorkloadSpec>& a, const std::vector<WorkloadSpec>& b) {
  using Key = std::tuple<int64_t, int32_t, int32_t, uint64_t>;
  std::map<Key, std::pair<double, double>> merged;
  for (const WorkloadSpec& s : a) {
    merged[{s.cpu_milli, s.gpu_milli, s.num_gpus, s.models.bits()}].first += s.weight;
  }
  for (const WorkloadSpec& s : b) {
    merged[{s.cpu_milli, s.gpu_milli, s.num_gpus, s.models.bits()}].second += s.weight;
  }
  double d = 0;
  for (const auto& [k, w] : merged) d += std::fabs(w.first - w.second);
  return d;
}

}  // namespace

CafgdCore::CafgdCore(CafgdOptions options, const ModelRegistry* names)
    : options_(options), names_(names) {}

CafgdCore::CafgdCore(CafgdOptions options, std::vector<WorkloadSpec> given)
    : options_(options), names_(nullptr), fixed_(true) {
  adopted_ = std::move(given);
  model_ = JointFragModel(adopted_, options_.cpu_weight, options_.cpu_mix);
}

void CafgdCore::Observe(const PodRequest& r) {
  if (fixed_) return;
  counter_.Add(r);
  if (r.num_gpus > 0) {
    gpu_pod_memory_ += static_cast<double>(r.memory_mib);
    gpu_pod_milli_ += static_cast<double>(r.TotalGpuMilli());
  }
  if (counter_.total() >= next_check_) MaybeAdopt();
}

void CafgdCore::MaybeAdopt() {
  const int64_t seen = counter_.total();
  next_check_ =
      seen +
      std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(seen) * options_.check_growth));
  std::vector<WorkloadSpec> learned = counter_.Typical(names_, options_.coverage);
  if (options_.prior > 0) {
    double sum = 0;
    for (const WorkloadSpec& s : learned) sum += static_cast<double>(s.count) + options_.prior;
    for (WorkloadSpec& s : learned)
      s.weight = (static_cast<double>(s.count) + options_.prior) / sum;
  }
  if (!adopted_.empty() && learned.size() == adopted_.size() &&
      WeightDistance(learned, adopted_) <= options_.tolerance) {
    return;
  }
  adopted_ = std::move(learned);
  pressure_stamp_ = 0;
  model_ = JointFragModel(adopted_, options_.cpu_weight, options_.cpu_mix,
                          options_.memory && gpu_pod_milli_ > 0
                              ? std::max(gpu_pod_memory_ / gpu_pod_milli_, 1e-9)
                              : 0.0);
  ++epoch_;
}

void CafgdCore::UpdatePressure(const Cluster& c) {
  if (options_.scarcity <= 0) return;
  if (c.stamp() == pressure_stamp_) return;  // neither the cluster nor adopted_ changed
  pressure_stamp_ = c.stamp();
  double free[kMaxModels] = {};
  double total = 0;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    const uint64_t bits = c.model_bits(n);
    if (bits == 0) continue;
    if ((bits & (bits - 1)) == 0) {
      free[std::countr_zero(bits)] += static_cast<double>(c.gpu_free_milli(n));
    } else {
      for (const GpuState& g : c.gpus(n)) free[g.model] += g.free_milli;
    }
    total += static_cast<double>(c.gpu_free_milli(n));
  }
  // Share of the learned GPU demand of each restricted spec, spread over its allowed models in
  // proportion to their free milli: pressure_g = total * sum_{m allows g} d_m / free(A_m).
  double demand = 0;
  for (const WorkloadSpec& m : adopted_) demand += m.weight * m.num_gpus * m.gpu_milli;
  double pressure[kMaxModels] = {};
  if (demand > 0 && total > 0) {
    for (const WorkloadSpec& m : adopted_) {
      if (m.models.IsAny() || m.num_gpus == 0) continue;
      double allowed = 0;
      for (uint64_t b = m.models.bits(); b != 0; b &= b - 1) allowed += free[std::countr_zero(b)];
      if (allowed <= 0) continue;
      const double share = m.weight * m.num_gpus * m.gpu_milli / demand;
      for (uint64_t b = m.models.bits(); b != 0; b &= b - 1) {
        pressure[std::countr_zero(b)] += total * share / allowed;
      }
    }
  }
  bool moved = false;
  double next[kMaxModels];
  for (int g = 0; g < kMaxModels; ++g) {
    next[g] = std::pow(std::min(1.0, pressure[g]), options_.scarcity_power);
    moved = moved || std::fabs(next[g] - cost_[g]) > options_.tolerance;
  }
  if (!moved) return;
  std::copy(next, next + kMaxModels, cost_);
  ++epoch_;
}

double CafgdCore::FragNow(const Cluster& c, NodeId n) {
  return frag_now_.Get(c, n, epoch_, [&] { return model_.NodeFrag(c, n); });
}

int64_t CafgdCore::Evaluate(const PodRequest& r, const Cluster& c, NodeId n, GpuSet* gpus) {
  const double before = FragNow(c, n);
  GpuScratch g(c.gpus(n));
  int32_t* const free = g.free;
  const ModelId* const models = g.models;
  const int64_t cpu_after = c.cpu_free(n) - r.cpu_milli;
  const int64_t mem_after = c.memory_free(n) - r.memory_mib;
  const std::span<const int32_t> free_span = g.free_milli();
  const std::span<const ModelId> model_span = g.model_ids();
  const double resolution = options_.resolution;
  auto primary = [&](double delta) {
    return static_cast<int64_t>(1.0 / (1.0 + std::exp(-delta / 1000.0)) * resolution);
  };
  // Secondary key (ties of the primary score), in 0..kSecondary-1, higher wins.
  const int64_t gpu_after = c.gpu_free_milli(n) - r.TotalGpuMilli();
  int64_t secondary = 0;
  switch (options_.tiebreak) {
    case 1:  // fewest free GPU milli left on the node
      secondary = kSecondary - 1 - std::clamp<int64_t>(gpu_after, 0, kSecondary - 1);
      break;
    case 2:  // CPU-only pods: fewest free GPU milli on the node
      if (r.IsCpuOnly())
        secondary = kSecondary - 1 - std::clamp<int64_t>(gpu_after, 0, kSecondary - 1);
      break;
    case 3:  // least free CPU left
      secondary = kSecondary - 1 - std::clamp<int64_t>(cpu_after / 10, 0, kSecondary - 1);
      break;
    default:
      break;
  }
  if (r.IsSharing()) {
    int64_t best = -1;
    int choice = -1;
    for (size_t i = 0; i < g.count; ++i) {
      if (!Cluster::GpuFits(r, g.state[i], FitOptions{})) continue;
      if (options_.sharing_best_fit && choice >= 0) {
        if (free[i] < free[choice]) choice = static_cast<int>(i);
        continue;
      }
      if (g.LikeAnEarlierFit(r, i)) continue;
      if (options_.sharing_best_fit) {
        choice = static_cast<int>(i);
        continue;
      }
      free[i] -= r.gpu_milli;
      const double after = model_.NodeFrag(cpu_after, free_span, model_span, mem_after) +
                           options_.scarcity * r.gpu_milli * cost_[models[i]];
      free[i] += r.gpu_milli;
      const int64_t s = primary(before - after);
      if (s > best) {
        best = s;
        choice = static_cast<int>(i);
      }
    }
    if (options_.sharing_best_fit && choice >= 0) {
      free[choice] -= r.gpu_milli;
      best = primary(before - model_.NodeFrag(cpu_after, free_span, model_span, mem_after) -
                     options_.scarcity * r.gpu_milli * cost_[models[choice]]);
    }
    if (gpus != nullptr) *gpus = choice < 0 ? 0 : GpuSet{1} << choice;
    return std::max<int64_t>(best, 0) * kSecondary + secondary;
  }
  const GpuSet take = r.num_gpus == 0 ? 0 : SelectBestFitGpus(r, c, n, FitOptions{});
  double scarce = 0;
  ForEachGpu(take, [&](int i) {
    free[i] -= r.gpu_milli;
    scarce += r.gpu_milli * cost_[models[i]];
  });
  const double after =
      model_.NodeFrag(cpu_after, free_span, model_span, mem_after) + options_.scarcity * scarce;
  if (gpus != nullptr) *gpus = take;
  return primary(before - after) * kSecondary + secondary;
}

}  // namespace vgpu::sched
