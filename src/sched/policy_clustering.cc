// clustering: keep pods of the same GPU class together (classes: "share" = part of one GPU,
// "k-gpu" = k whole GPUs; CPU-only pods have none).
//
//   band = 75  if the node holds only pods of the pod's class
//          50  if it holds the pod's class and others
//          25  if it holds no GPU pod at all
//           0  if it holds only other classes
//   score = band + 25 * (8000 - gpu_free) / 8000          (integer arithmetic)
//   CPU-only pods score 0 everywhere (the node order decides).
//
// gpu_free is the node's total free GPU milli. GPU choice: best fit.
#include "sched/policies.h"
#include "sched/policy_common.h"

namespace vgpu::sched {
namespace {

class ClusteringScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "clustering"; }
  PodRequest ScoreKey(const PodRequest& r) const override {
    PodRequest k;  // only the class matters
    k.num_gpus = r.num_gpus;
    k.gpu_milli = r.gpu_milli < kGpuMilli ? 1 : kGpuMilli;
    return k;
  }
  int64_t Score(const PodRequest& r, const Cluster& c, NodeId n) override {
    const int cls = GpuClassOf(r);
    if (cls < 0) return 0;
    constexpr int64_t kQuarter = kMaxNodeScore / 4;
    const int64_t fill = kQuarter * (static_cast<int64_t>(kMaxSpecGpu) - c.gpu_free_milli(n)) /
                         static_cast<int64_t>(kMaxSpecGpu);
    const int classes = c.NumClasses(n);
    if (c.PodsOfClass(n, cls) > 0) {
      return fill + (classes == 1 ? kMaxNodeScore * 3 / 4 : kMaxNodeScore * 2 / 4);
    }
    return fill + (classes == 0 ? kQuarter : 0);
  }
};

}  // namespace

Result<std::unique_ptr<Policy>> MakeClusteringPolicy(const PolicyArgs& args) {
  VGPU_RETURN_IF_ERROR(CheckParams("clustering", args, {}));
  auto p = std::make_unique<Policy>();
  p->name = "clustering";
  p->score = std::make_unique<ClusteringScore>();
  p->gpus = MakeBestFitGpuSelector();
  return p;
}

}  // namespace vgpu::sched
