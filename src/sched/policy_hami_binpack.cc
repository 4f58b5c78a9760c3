// hami-binpack: HAMi's scheduler with node policy binpack and GPU policy binpack: the node whose
// GPUs are most used wins (node binpack); on it, the most used fitting GPUs (GPU binpack).
//
//   score = node score,  node score = 10 * (used slots / slots + used milli / total milli
//                                        + used mem / total mem)          (before placement)
//   GPUs  = fitting GPUs by device score, highest first,
//           device score = 10 * ((1 + used slots) / slots + (milli + used milli) / 1000
//                               + (mem + used mem) / mem capacity)
//
// See hami_score.h for the memory rule. A GPU takes at most `split` pods (HAMi's split count,
// option split, default 10). CPU-only pods are scored the same way (HAMi itself leaves them to
// kube-scheduler). Ties go to the node order.
#include <cmath>

#include "sched/hami_score.h"
#include "sched/policies.h"
#include "sched/policy_common.h"

namespace vgpu::sched {
namespace {

class HamiBinpackScore final : public ScorePlugin {
 public:
  explicit HamiBinpackScore(int split) : split_(split) {}
  std::string_view Name() const override { return "hami-binpack"; }
  PodRequest ScoreKey(const PodRequest&) const override { return PodRequest{}; }  // node state only
  int64_t Score(const PodRequest&, const Cluster& c, NodeId n) override {
    return std::llround(HamiNodeScore(c, n, split_) * kHamiScale);
  }

 private:
  int split_;
};

class HamiBinpackGpus final : public GpuSelector {
 public:
  explicit HamiBinpackGpus(int split) : split_(split) {}
  std::string_view Name() const override { return "hami-binpack-gpu"; }
  GpuSet SelectGpus(const PodRequest& r, const Cluster& c, NodeId n, Rng&) override {
    return SelectHamiGpus(r, c, n, split_, /*binpack=*/true);
  }

 private:
  int split_;
};

}  // namespace

Result<std::unique_ptr<Policy>> MakeHamiBinpackPolicy(const PolicyArgs& args) {
  VGPU_RETURN_IF_ERROR(CheckParams("hami-binpack", args, {"split"}));
  auto split = GetNumberParam("hami-binpack", args, "split", kHamiDefaultSplit, 1, 1000);
  if (!split) return split.error();
  const int slots = static_cast<int>(*split);
  auto p = std::make_unique<Policy>();
  p->name = "hami-binpack";
  p->fit.max_pods_per_gpu = slots;
  p->score = std::make_unique<HamiBinpackScore>(slots);
  p->gpus = std::make_unique<HamiBinpackGpus>(slots);
  return p;
}

}  // namespace vgpu::sched
