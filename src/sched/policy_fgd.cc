// fgd: Fragmentation Gradient Descent (Weng et al., USENIX ATC'23), with the target workload given
// in advance (the FGD paper's runs take it from the whole trace).
//
//   F_n(M)  = sum_m p_m * F_n(m)                      (fragmentation, see frag.h)
//   score   = int64( 100 * sigmoid( (F_n(M) - F_n'(M)) / 1000 ) )
//
// n' is node n after the placement (its CPU and the chosen GPUs taken). The node whose
// fragmentation grows least wins; ties go to the node order. GPU choice: a sharing pod takes the
// fitting GPU with the best score (lowest index among equals); other pods take the fitting GPUs
// with the least free milli (whole GPUs: the lowest-index idle ones). See fgd_core.h.
#include <memory>

#include "sched/fgd_core.h"
#include "sched/policies.h"
#include "sched/policy_common.h"

namespace vgpu::sched {

// Score and GPU choice of FGD over a shared FgdCore (also used by fgd-online).
class FgdScore final : public ScorePlugin {
 public:
  FgdScore(std::string name, std::shared_ptr<FgdCore> core)
      : name_(std::move(name)), core_(std::move(core)) {}
  std::string_view Name() const override { return name_; }
  uint64_t Epoch() const override { return core_->epoch(); }
  PodRequest ScoreKey(const PodRequest& r) const override { return WithoutHostMemory(r); }
  int64_t Score(const PodRequest& r, const Cluster& c, NodeId n) override {
    return core_->Evaluate(r, c, n, nullptr);
  }

 private:
  std::string name_;
  std::shared_ptr<FgdCore> core_;
};

class FgdGpus final : public GpuSelector {
 public:
  explicit FgdGpus(std::shared_ptr<FgdCore> core) : core_(std::move(core)) {}
  std::string_view Name() const override { return "fgd-gpu"; }
  GpuSet SelectGpus(const PodRequest& r, const Cluster& c, NodeId n, Rng&) override {
    GpuSet set = 0;
    core_->Evaluate(r, c, n, &set);
    return set;
  }

 private:
  std::shared_ptr<FgdCore> core_;
};

class FgdObserver final : public ObservePlugin {
 public:
  explicit FgdObserver(std::shared_ptr<FgdCore> core) : core_(std::move(core)) {}
  void Observe(const PodRequest& r) override { core_->Observe(r); }

 private:
  std::shared_ptr<FgdCore> core_;
};

std::unique_ptr<Policy> MakeFgdFromCore(std::string name, std::shared_ptr<FgdCore> core) {
  auto p = std::make_unique<Policy>();
  p->name = name;
  p->score = std::make_unique<FgdScore>(name, core);
  p->gpus = std::make_unique<FgdGpus>(core);
  p->observers.push_back(std::make_unique<FgdObserver>(core));
  p->keep_alive.push_back(core);
  return p;
}

Result<std::unique_ptr<Policy>> MakeFgdPolicy(const PolicyArgs& args) {
  VGPU_RETURN_IF_ERROR(CheckParams("fgd", args, {}));
  if (args.target_workload.empty()) {
    return Status::InvalidArgument(
        "policy 'fgd' needs a target workload (the typical pods of the trace); use fgd-online to "
        "learn it from arriving pods");
  }
  return MakeFgdFromCore("fgd", std::make_shared<FgdCore>(args.target_workload));
}

}  // namespace vgpu::sched
