// hami-spread: HAMi's scheduler with node policy spread and GPU policy spread: the node whose GPUs
// are least used wins (node spread); on it, the least used fitting GPUs (GPU spread).
//
//   score = -(node score),  node score = 10 * (used slots / slots + used milli / total milli
//                                        + used mem / total mem)          (before placement)
//   GPUs  = fitting GPUs by device score, lowest first,
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

class HamiSpreadScore final : public ScorePlugin {
 public:
  explicit HamiSpreadScore(int split) : split_(split) {}
  std::string_view Name() const override { return "hami-spread"; }
  PodRequest ScoreKey(const PodRequest&) const override { return PodRequest{}; }  // node state only
  int64_t Score(const PodRequest&, const Cluster& c, NodeId n) override {
    return -std::llround(HamiNodeScore(c, n, split_) * kHamiScale);
  }

 private:
  int split_;
};

class HamiSpreadGpus final : public GpuSelector {
 public:
  explicit HamiSpreadGpus(int split) : split_(split) {}
  std::string_view Name() const override { return "hami-spread-gpu"; }
  GpuSet SelectGpus(const PodRequest& r, const Cluster& c, NodeId n, Rng&) override {
    return SelectHamiGpus(r, c, n, split_, /*binpack=*/false);
  }

 private:
  int split_;
};

}  // namespace

Result<std::unique_ptr<Policy>> MakeHamiSpreadPolicy(const PolicyArgs& args) {
  VGPU_RETURN_IF_ERROR(CheckParams("hami-spread", args, {"split"}));
  auto split = GetNumberParam("hami-spread", args, "split", kHamiDefaultSplit, 1, 1000);
  if (!split) return split.error();
  const int slots = static_cast<int>(*split);
  auto p = std::make_unique<Policy>();
  p->name = "hami-spread";
  p->fit.max_pods_per_gpu = slots;
  p->score = std::make_unique<HamiSpreadScore>(slots);
  p->gpus = std::make_unique<HamiSpreadGpus>(slots);
  return p;
}

}  // namespace vgpu::sched
