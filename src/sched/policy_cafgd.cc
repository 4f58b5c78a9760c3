// cafgd: CPU-aware fragmentation gradient descent with the workload learned online.
//
//   M_t     = typical set of the pods observed so far (cafgd_core.h)
//   J_n(M)  = sum_m p_m J_n(m), FGD's GPU fragmentation plus the usable GPU capacity the node's
//             free CPU cannot feed (joint_frag.h)
//   score   = int64( 100 * sigmoid( (J_n(M_t) - J_n'(M_t)) / 1000 ) )
//
// Options: cpu_weight (0..10, default 1), prior (0..1000, default 0), coverage (0.5..1, default
// 0.95), check_growth (0..1, default 0.02), tolerance (0..2, default 0.02).
#include <memory>

#include "sched/cafgd_core.h"
#include "sched/policies.h"
#include "sched/policy_common.h"

namespace vgpu::sched {
namespace {

class CafgdScore final : public ScorePlugin {
 public:
  explicit CafgdScore(std::shared_ptr<CafgdCore> core) : core_(std::move(core)) {}
  std::string_view Name() const override { return "cafgd"; }
  uint64_t Epoch() const override { return core_->epoch(); }
  PodRequest ScoreKey(const PodRequest& r) const override { return WithoutHostMemory(r); }
  void PreScore(const PodRequest&, const Cluster& c, std::span<const NodeId>, Rng&) override {
    core_->UpdatePressure(c);
  }
  int64_t Score(const PodRequest& r, const Cluster& c, NodeId n) override {
    return core_->Evaluate(r, c, n, nullptr);
  }

 private:
  std::shared_ptr<CafgdCore> core_;
};

class CafgdGpus final : public GpuSelector {
 public:
  explicit CafgdGpus(std::shared_ptr<CafgdCore> core) : core_(std::move(core)) {}
  std::string_view Name() const override { return "cafgd-gpu"; }
  GpuSet SelectGpus(const PodRequest& r, const Cluster& c, NodeId n, Rng&) override {
    GpuSet set = 0;
    core_->Evaluate(r, c, n, &set);
    return set;
  }

 private:
  std::shared_ptr<CafgdCore> core_;
};

class CafgdObserver final : public ObservePlugin {
 public:
  explicit CafgdObserver(std::shared_ptr<CafgdCore> core) : core_(std::move(core)) {}
  void Observe(const PodRequest& r) override { core_->Observe(r); }

 private:
  std::shared_ptr<CafgdCore> core_;
};

}  // namespace

Result<std::unique_ptr<Policy>> MakeCafgdPolicy(const PolicyArgs& args) {
  constexpr std::string_view kName = "cafgd";
  VGPU_RETURN_IF_ERROR(CheckParams(
      kName, args,
      {"cpu_weight", "prior", "coverage", "check_growth", "tolerance", "given_workload", "scarcity",
       "scarcity_power", "cpu_mix", "resolution", "tiebreak", "sharing_best_fit"}));
  CafgdOptions o;
  struct Knob {
    const char* key;
    double* value;
    double min, max;
  };
  for (const Knob& k :
       {Knob{"cpu_weight", &o.cpu_weight, 0, 10}, Knob{"prior", &o.prior, 0, 1000},
        Knob{"coverage", &o.coverage, 0.5, 1}, Knob{"check_growth", &o.check_growth, 0, 1},
        Knob{"tolerance", &o.tolerance, 0, 2}, Knob{"scarcity", &o.scarcity, 0, 10},
        Knob{"scarcity_power", &o.scarcity_power, 0, 16}}) {
    auto v = GetNumberParam(kName, args, k.key, *k.value, k.min, k.max);
    if (!v) return v.error();
    *k.value = *v;
  }
  double tiebreak = 0, best_fit = 0;
  for (const Knob& k :
       {Knob{"resolution", &o.resolution, 1, 1e6}, Knob{"tiebreak", &tiebreak, 0, 3},
        Knob{"sharing_best_fit", &best_fit, 0, 1}}) {
    auto v = GetNumberParam(kName, args, k.key, *k.value, k.min, k.max);
    if (!v) return v.error();
    *k.value = *v;
  }
  o.tiebreak = static_cast<int>(tiebreak);
  o.sharing_best_fit = best_fit != 0;
  auto mix = GetNumberParam(kName, args, "cpu_mix", 1, 0, 1);
  if (!mix) return mix.error();
  o.cpu_mix = *mix != 0;
  auto given = GetNumberParam(kName, args, "given_workload", 0, 0, 1);
  if (!given) return given.error();
  auto core = *given != 0 ? std::make_shared<CafgdCore>(o, args.target_workload)
                          : std::make_shared<CafgdCore>(o, args.models);
  auto p = std::make_unique<Policy>();
  p->name = std::string(kName);
  p->score = std::make_unique<CafgdScore>(core);
  p->gpus = std::make_unique<CafgdGpus>(core);
  p->observers.push_back(std::make_unique<CafgdObserver>(core));
  p->keep_alive.push_back(core);
  return p;
}

}  // namespace vgpu::sched
