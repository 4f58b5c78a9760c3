// dotprod: Tetris-style alignment of free resources and the request (dimension merge, max norm).
//
//   f = [cpu_free / 128000, gpu_free / 8000],  q = [cpu_req / 128000, gpu_req / 8000]
//   score = int64( 100 * (1 - (f . q) / 2) )
//
// gpu_free is the node's total free GPU milli, gpu_req = num_gpus * gpu_milli, both before the
// placement. The smallest dot product wins (packing onto nodes with little left). A node without
// the CPU scores 0. GPU choice: best fit.
#include "sched/policies.h"
#include "sched/policy_common.h"

namespace vgpu::sched {
namespace {

class DotProdScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "dotprod"; }
  PodRequest ScoreKey(const PodRequest& r) const override { return WithoutHostMemory(r); }
  int64_t Score(const PodRequest& r, const Cluster& c, NodeId n) override {
    if (c.cpu_free(n) < r.cpu_milli) return 0;
    const double f0 = static_cast<double>(c.cpu_free(n)) / kMaxSpecCpu;
    const double f1 = static_cast<double>(c.gpu_free_milli(n)) / kMaxSpecGpu;
    const double q0 = static_cast<double>(r.cpu_milli) / kMaxSpecCpu;
    const double q1 = static_cast<double>(r.TotalGpuMilli()) / kMaxSpecGpu;
    double dot = f0 * q0 + f1 * q1;
    dot /= 2;
    return static_cast<int64_t>(static_cast<double>(kMaxNodeScore) * (1 - dot));
  }
};

}  // namespace

Result<std::unique_ptr<Policy>> MakeDotProdPolicy(const PolicyArgs& args) {
  VGPU_RETURN_IF_ERROR(CheckParams("dotprod", args, {}));
  auto p = std::make_unique<Policy>();
  p->name = "dotprod";
  p->score = std::make_unique<DotProdScore>();
  p->gpus = MakeBestFitGpuSelector();
  return p;
}

}  // namespace vgpu::sched
