// GPU selectors shared by several policies.
#include <algorithm>

#include "sched/policies.h"

namespace vgpu::sched {

GpuSet SelectBestFitGpus(const PodRequest& r, const Cluster& c, NodeId n, const FitOptions& fit) {
  const auto gpus = c.gpus(n);
  if (r.num_gpus == 1) {
    int best = -1;
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (!Cluster::GpuFits(r, gpus[i], fit)) continue;
      if (best < 0 || gpus[i].free_milli < gpus[best].free_milli) best = static_cast<int>(i);
    }
    return best < 0 ? 0 : GpuSet{1} << best;
  }
  int idx[kMaxGpusPerNode];
  int count = 0;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (Cluster::GpuFits(r, gpus[i], fit)) idx[count++] = static_cast<int>(i);
  }
  std::stable_sort(idx, idx + count,
                   [&](int a, int b) { return gpus[a].free_milli < gpus[b].free_milli; });
  GpuSet set = 0;
  for (int k = 0; k < count && k < r.num_gpus; ++k) set |= GpuSet{1} << idx[k];
  return set;
}

namespace {

class BestFitGpus final : public GpuSelector {
 public:
  explicit BestFitGpus(FitOptions fit) : fit_(fit) {}
  std::string_view Name() const override { return "best-fit-gpu"; }
  GpuSet SelectGpus(const PodRequest& r, const Cluster& c, NodeId n, Rng&) override {
    return SelectBestFitGpus(r, c, n, fit_);
  }

 private:
  FitOptions fit_;
};

class RandomFitGpus final : public GpuSelector {
 public:
  explicit RandomFitGpus(FitOptions fit) : fit_(fit) {}
  std::string_view Name() const override { return "random-fit-gpu"; }
  GpuSet SelectGpus(const PodRequest& r, const Cluster& c, NodeId n, Rng& rng) override {
    const auto gpus = c.gpus(n);
    GpuSet set = 0;
    if (r.IsSharing()) {
      int fitting = 0;
      for (size_t i = 0; i < gpus.size(); ++i) {
        if (!Cluster::GpuFits(r, gpus[i], fit_)) continue;
        ++fitting;  // reservoir sampling: the k-th fitting GPU replaces the pick with odds 1/k
        if (rng.UniformInt(static_cast<uint64_t>(fitting)) == 0) set = GpuSet{1} << i;
      }
      return set;
    }
    int taken = 0;
    for (size_t i = 0; i < gpus.size() && taken < r.num_gpus; ++i) {
      if (Cluster::GpuFits(r, gpus[i], fit_)) {
        set |= GpuSet{1} << i;
        ++taken;
      }
    }
    return set;
  }

 private:
  FitOptions fit_;
};

}  // namespace

std::unique_ptr<GpuSelector> MakeBestFitGpuSelector(FitOptions fit) {
  return std::make_unique<BestFitGpus>(fit);
}
std::unique_ptr<GpuSelector> MakeRandomFitGpuSelector(FitOptions fit) {
  return std::make_unique<RandomFitGpus>(fit);
}

}  // namespace vgpu::sched
