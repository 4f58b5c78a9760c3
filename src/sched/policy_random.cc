// random: a feasible node chosen uniformly at random.
//
//   score = 100 for one node drawn uniformly from the feasible nodes, 0 for all others.
//
// GPU choice: random fit (a sharing pod gets a uniformly random fitting GPU; whole-GPU pods take
// the lowest-index idle GPUs), as in the FGD simulator. Not cacheable: each decision draws anew.
#include "sched/policies.h"
#include "sched/policy_common.h"

namespace vgpu::sched {
namespace {

class RandomScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "random"; }
  bool Cacheable() const override { return false; }
  void PreScore(const PodRequest&, const Cluster&, std::span<const NodeId> feasible,
                Rng& rng) override {
    chosen_ = feasible.empty() ? 0 : feasible[rng.UniformInt(feasible.size())];
  }
  int64_t Score(const PodRequest&, const Cluster&, NodeId n) override {
    return n == chosen_ ? kMaxNodeScore : 0;
  }

 private:
  NodeId chosen_ = 0;
};

}  // namespace

Result<std::unique_ptr<Policy>> MakeRandomPolicy(const PolicyArgs& args) {
  VGPU_RETURN_IF_ERROR(CheckParams("random", args, {}));
  auto p = std::make_unique<Policy>();
  p->name = "random";
  p->score = std::make_unique<RandomScore>();
  p->gpus = MakeRandomFitGpuSelector();
  return p;
}

}  // namespace vgpu::sched
