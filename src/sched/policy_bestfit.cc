// bestfit: the node that is left with the least CPU and GPU.
//
//   score = int64( 100 * (1 - [ 0.5 * (cpu_free - cpu_req) / 128000
//                             + 0.5 * (gpu_free - gpu_req) / 8000 ]) )
//
// cpu_free: the node's free CPU milli; gpu_free: the sum of its GPUs' free milli;
// gpu_req = num_gpus * gpu_milli. Truncated to an integer as in the FGD simulator. GPU choice:
// best fit (the fitting GPU with the least free milli; whole GPUs by lowest index).
#include "sched/policies.h"
#include "sched/policy_common.h"

namespace vgpu::sched {
namespace {

class BestFitScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "bestfit"; }
  PodRequest ScoreKey(const PodRequest& r) const override { return WithoutHostMemory(r); }
  int64_t Score(const PodRequest& r, const Cluster& c, NodeId n) override {
    double score = 0;
    score += static_cast<double>(c.cpu_free(n) - r.cpu_milli) / kMaxSpecCpu * 0.5;
    score += static_cast<double>(c.gpu_free_milli(n) - r.TotalGpuMilli()) / kMaxSpecGpu * 0.5;
    return static_cast<int64_t>((1.0 - score) * static_cast<double>(kMaxNodeScore));
  }
};

}  // namespace

Result<std::unique_ptr<Policy>> MakeBestFitPolicy(const PolicyArgs& args) {
  VGPU_RETURN_IF_ERROR(CheckParams("bestfit", args, {}));
  auto p = std::make_unique<Policy>();
  p->name = "bestfit";
  p->score = std::make_unique<BestFitScore>();
  p->gpus = MakeBestFitGpuSelector();
  return p;
}

}  // namespace vgpu::sched
