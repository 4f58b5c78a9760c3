// packing: fill GPUs that are already in use, then nodes already in use, then idle nodes.
//
// Tiers, best first (integer arithmetic, as in the FGD simulator's GpuPacking):
//   1. the pod fits on GPUs already in use:  score = max(100 - S / 10, 50),
//      S = sum over the GPUs it would take of (their free milli * 100 / 1000);
//   2. it needs idle GPUs on a node in use:  score = max(50 - idle GPUs taken, 33);
//   3. the node is idle (all GPUs free):     score = max(33 - number of GPUs, number of GPUs).
// The GPUs "it would take" are the fitting ones with the least free milli first. CPU-only pods
// score 0 everywhere (the node order decides). GPU choice: best fit.
#include <algorithm>

#include "sched/policies.h"
#include "sched/policy_common.h"

namespace vgpu::sched {
namespace {

class PackingScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "packing"; }
  PodRequest ScoreKey(const PodRequest& r) const override {
    PodRequest k = WithoutHostMemory(r);
    k.cpu_milli = 0;  // the score ignores CPU
    return k;
  }
  int64_t Score(const PodRequest& r, const Cluster& c, NodeId n) override {
    if (r.num_gpus == 0) return 0;
    const int full = c.full_free_gpus(n);
    const int count = c.num_gpus(n);
    if (full == count) {
      return std::max<int64_t>(kMaxNodeScore / 3 - full, full);
    }
    const auto gpus = c.gpus(n);
    int idx[kMaxGpusPerNode];
    for (int i = 0; i < count; ++i) idx[i] = i;
    std::stable_sort(idx, idx + count,
                     [&](int a, int b) { return gpus[a].free_milli < gpus[b].free_milli; });
    int need = r.num_gpus;
    int full_taken = 0;
    int64_t free_pct_sum = 0;
    for (int k = 0; k < count && need > 0; ++k) {
      const GpuState& g = gpus[idx[k]];
      if (!Cluster::GpuFits(r, g, FitOptions{})) continue;
      --need;
      if (g.free_milli == kGpuMilli) ++full_taken;
      free_pct_sum += int64_t{g.free_milli} * 100 / kGpuMilli;
    }
    if (need > 0) return 0;
    if (full_taken > 0) return std::max<int64_t>(kMaxNodeScore / 2 - full_taken, kMaxNodeScore / 3);
    return std::max<int64_t>(kMaxNodeScore - free_pct_sum / 10, kMaxNodeScore / 2);
  }
};

}  // namespace

Result<std::unique_ptr<Policy>> MakePackingPolicy(const PolicyArgs& args) {
  VGPU_RETURN_IF_ERROR(CheckParams("packing", args, {}));
  auto p = std::make_unique<Policy>();
  p->name = "packing";
  p->score = std::make_unique<PackingScore>();
  p->gpus = MakeBestFitGpuSelector();
  return p;
}

}  // namespace vgpu::sched
