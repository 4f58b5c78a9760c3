// cafgd (the `default` policy): CPU-aware fragmentation gradient descent with the workload
// learned online and a cost for using GPU models that constrained pods need.
//
//   M_t      = typical set of the pods observed so far (specs by count up to 95% of the pods,
//              weights p_m = renormalized counts); re-learned every 10% more pods, adopted when it
//              moved by more than 0.05 (L1). Never the future trace: only Observe() feeds it.
//   F_n(m)   = FGD's fragmentation of node n for spec m (frag.h)
//   S_n      = (sum of the GPU specs' p_m) * max(0, G_n - C_n / rho): the free GPU milli G_n that
//              the node's free CPU C_n cannot feed at rho, the learned workload's CPU per GPU milli
//              (rho = sum p_m cpu_m / sum p_m gpu_m over GPU specs)
//   J_n      = sum_m p_m F_n(m) + S_n                                  (joint_frag.h, mix form)
//   pi_g     = F * sum over constrained specs m allowing model g of d_m / F(A_m): the pressure on
//              GPU model g, d_m = m's share of the learned GPU demand, F(A) = free GPU milli of
//              the models in A, F = all free GPU milli                (cafgd_core.cc)
//   cost(r,n)= sum over the GPUs r takes on n of gpu_milli * min(1, pi_model)^2
//   delta    = J_n - J_n' - cost(r, n),  n' = n after r (its CPU and GPUs taken)
//   score    = int64( 100 * sigmoid( delta / 1000 ) ),  ties to the node order
//
// GPU choice: a sharing pod takes the fitting GPU with the best score (lowest index on ties); other
// pods take the fitting GPUs with the least free milli. With no constrained specs the pressure is 0
// and cafgd is FGD over J_n; with S_n = 0 as well it is fgd-online.
//
// Options (defaults are the policy; the others exist to measure each mechanism, see
// docs/default-policy.md): cpu_weight (0..10, default 1: weight of S_n), cpu_mix (1; 0 = the
// per-spec CPU term of joint_frag.h), scarcity (0..10, default 1: weight of the model cost),
// scarcity_power (0..16, default 2), prior (0..1000, default 0: pseudo-count per learned spec),
// coverage (0.5..1, default 0.95), check_growth (0..1, default 0.1), tolerance (0..2, default
// 0.05), resolution (1..1e6, default 100: the score's scale before truncation), tiebreak (0..3,
// default 0: none; 1 fewest free GPU milli left, 2 the same for CPU-only pods only, 3 least free
// CPU left), sharing_best_fit (0), given_workload (0; 1 = use the target workload given in
// advance instead of learning, a diagnostic that breaks the online rule).
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
  PodRequest ScoreKey(const PodRequest& r) const override {
    return core_->options().memory ? r : WithoutHostMemory(r);
  }
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
       "scarcity_power", "cpu_mix", "resolution", "tiebreak", "sharing_best_fit", "memory"}));
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
  double tiebreak = 0, best_fit = 0, memory = 0;
  for (const Knob& k :
       {Knob{"resolution", &o.resolution, 1, 1e6}, Knob{"tiebreak", &tiebreak, 0, 3},
        Knob{"sharing_best_fit", &best_fit, 0, 1}}) {
    auto v = GetNumberParam(kName, args, k.key, *k.value, k.min, k.max);
    if (!v) return v.error();
    *k.value = *v;
  }
  o.tiebreak = static_cast<int>(tiebreak);
  o.sharing_best_fit = best_fit != 0;
  o.memory = memory != 0;
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
