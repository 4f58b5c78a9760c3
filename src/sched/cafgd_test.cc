// The joint CPU/GPU fragmentation measure (joint_frag.h) and the cafgd policy (policy_cafgd.cc,
// cafgd_core.h): hand-computed cases, agreement with the definition and with FGD's measure, and
// that the policy learns only from the pods it has been shown.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/rng.h"
#include "sched/cafgd_core.h"
#include "sched/frag.h"
#include "sched/joint_frag.h"
#include "sched/policies.h"
#include "sched/registry.h"
#include "sched/scheduler.h"
#include "sched/test_util.h"

namespace vgpu::sched {
namespace {

using testing::MakeNode;
using testing::On;
using testing::Pod;
using testing::Spec;

// Node: 8 cores free, four GPUs of model 0 with 1000, 500, 200 and 0 milli free (1700 in all).
const std::vector<int32_t> kFree = {1000, 500, 200, 0};
const std::vector<ModelId> kModels = {0, 0, 0, 0};

double Sigmoid100(double delta) { return std::floor(100.0 / (1.0 + std::exp(-delta / 1000.0))); }

TEST(JointFrag, SpecByHand) {
  // 300 milli, 4 cores: usable GPUs 1000 and 500 (U = 1500, slots 3 + 1 = 4), fed = 8/4 = 2:
  // FGD's 200 plus 1500 * (1 - 2/4) = 750.
  EXPECT_DOUBLE_EQ(SpecJointFrag(Spec(4000, 1, 300, 1), 1.0, 8000, kFree, kModels), 950);
  EXPECT_DOUBLE_EQ(SpecJointFrag(Spec(4000, 1, 300, 1), 0.5, 8000, kFree, kModels), 575);
  // 500 milli, 3 cores: slots 2 + 1 = 3, fed 2: 200 + 1500 / 3.
  EXPECT_DOUBLE_EQ(SpecJointFrag(Spec(3000, 1, 500, 1), 1.0, 8000, kFree, kModels), 700);
  // A whole GPU, 1 core: one slot, fed 8: FGD's 700 only.
  EXPECT_DOUBLE_EQ(SpecJointFrag(Spec(1000, 1, 1000, 1), 1.0, 8000, kFree, kModels), 700);
  // Not enough CPU, too few GPUs, CPU-only: everything, as in FGD.
  EXPECT_DOUBLE_EQ(SpecJointFrag(Spec(16000, 1, 600, 1), 1.0, 8000, kFree, kModels), 1700);
  EXPECT_DOUBLE_EQ(SpecJointFrag(Spec(1000, 2, 1000, 1), 1.0, 8000, kFree, kModels), 1700);
  EXPECT_DOUBLE_EQ(SpecJointFrag(Spec(4000, 0, 0, 1), 1.0, 8000, kFree, kModels), 1700);
  // Weight 0 is FGD's measure.
  EXPECT_DOUBLE_EQ(SpecJointFrag(Spec(4000, 1, 300, 1), 0.0, 8000, kFree, kModels),
                   SpecFrag(Spec(4000, 1, 300, 1), 8000, kFree, kModels));
}

TEST(JointFrag, MixFormByHand) {
  // One spec, 8 cores per whole GPU: rho = 8 CPU milli per GPU milli. 8 free cores feed 1000
  // milli of the 1700 free: 700 short, on top of FGD's 700 (the 500 and the 200).
  const std::vector<WorkloadSpec> one = {Spec(8000, 1, 1000, 1)};
  EXPECT_DOUBLE_EQ(JointFragModel(one, 1.0, true).NodeFrag(8000, kFree, kModels), 1400);
  // The per-spec form sees one slot fed by one pod's CPU: no shortfall.
  EXPECT_DOUBLE_EQ(JointFragModel(one, 1.0, false).NodeFrag(8000, kFree, kModels), 700);
  // With a CPU-only spec (weight 0.25) and a 500-milli spec with 2 cores (weight 0.25):
  // rho = (0.5 * 8000 + 0.25 * 2000) / (0.5 * 1000 + 0.25 * 500) = 7.2;
  // FGD: 0.25 * 1700 + 0.5 * 700 + 0.25 * 200 = 825; CPU: 0.75 * (1700 - 8000 / 7.2).
  const std::vector<WorkloadSpec> three = {Spec(8000, 1, 1000, 0.5), Spec(4000, 0, 0, 0.25),
                                           Spec(2000, 1, 500, 0.25)};
  EXPECT_NEAR(JointFragModel(three, 1.0, true).NodeFrag(8000, kFree, kModels),
              825 + 0.75 * (1700 - 8000 / 7.2), 1e-9);
  // Plenty of CPU: FGD's value.
  EXPECT_NEAR(JointFragModel(three, 1.0, true).NodeFrag(64000, kFree, kModels), 825, 1e-9);
  // No free GPU: nothing to strand.
  const std::vector<int32_t> none = {0, 0, 0, 0};
  EXPECT_EQ(JointFragModel(three, 1.0, true).NodeFrag(0, none, kModels), 0.0);
}

TEST(JointFrag, GroupedEvaluationMatchesDefinitionAndFgd) {
  Rng rng(11);
  std::vector<WorkloadSpec> m;
  for (int i = 0; i < 30; ++i) {
    const int num = static_cast<int>(rng.UniformInt(4));
    const int32_t milli =
        num == 0 ? 0 : (num > 1 ? 1000 : 50 + 50 * static_cast<int32_t>(rng.UniformInt(20)));
    ModelSet models;
    if (rng.UniformInt(3) == 0) models.Add(static_cast<ModelId>(rng.UniformInt(3)));
    m.push_back(
        Spec(1000 * static_cast<int64_t>(rng.UniformInt(40)), num, milli, 1.0 / 30, models));
  }
  const JointFragModel spec_form(m, 0.7, false);
  const JointFragModel zero(m, 0.0, true);
  const FragModel fgd(m);
  for (int trial = 0; trial < 500; ++trial) {
    const size_t gpus = rng.UniformInt(9);
    std::vector<int32_t> free(gpus);
    std::vector<ModelId> models(gpus);
    for (size_t i = 0; i < gpus; ++i) {
      free[i] = static_cast<int32_t>(rng.UniformInt(21)) * 50;
      models[i] = static_cast<ModelId>(rng.UniformInt(3));
    }
    const int64_t cpu = 1000 * static_cast<int64_t>(rng.UniformInt(50));
    double expected = 0;
    for (const WorkloadSpec& s : m) expected += s.weight * SpecJointFrag(s, 0.7, cpu, free, models);
    EXPECT_NEAR(spec_form.NodeFrag(cpu, free, models), expected, 1e-6);
    EXPECT_NEAR(zero.NodeFrag(cpu, free, models), fgd.NodeFrag(cpu, free, models), 1e-6);
  }
}

std::unique_ptr<Policy> MakeCafgd(std::map<std::string, std::string> params = {},
                                  std::vector<WorkloadSpec> target = {}) {
  PolicyArgs args;
  args.params = std::move(params);
  args.target_workload = std::move(target);
  auto p = BuiltinPolicies().Create("cafgd", args);
  EXPECT_TRUE(p.has_value());
  return std::move(*p);
}

int64_t PrimaryScore(Policy& p, const PodRequest& r, const Cluster& c, NodeId n) {
  Rng rng(1);
  p.score->PreScore(r, c, {}, rng);
  return p.score->Score(r, c, n) / kCafgdTieScale;
}

TEST(Cafgd, EmptyModelScoresEveryNodeAlike) {
  Cluster c;
  const NodeId a = *c.AddNode(MakeNode("a", 16000, 64000, 4));
  const NodeId b = *c.AddNode(MakeNode("b", 64000, 64000, 2));
  auto p = MakeCafgd();
  EXPECT_EQ(PrimaryScore(*p, Pod(4000, 1, 500), c, a), 50);
  EXPECT_EQ(PrimaryScore(*p, Pod(4000, 1, 500), c, b), 50);
}

// n0 is CPU-poor (16 cores for 4 GPUs), n1 CPU-rich (64 cores for 4 GPUs). Learned workload:
// (1 GPU, 4 cores) x3 and (CPU-only, 8 cores) x1, so rho = 4 and p(GPU spec) = 0.75.
class CpuPoorAndRich : public ::testing::Test {
 protected:
  void SetUp() override {
    n0_ = *c_.AddNode(MakeNode("n0", 16000, 256000, 4));
    n1_ = *c_.AddNode(MakeNode("n1", 64000, 256000, 4));
  }
  void Learn(Policy& p) {
    for (int i = 0; i < 3; ++i) p.observers[0]->Observe(Pod(4000, 1, 1000));
    p.observers[0]->Observe(Pod(8000));
  }
  Cluster c_;
  NodeId n0_ = 0, n1_ = 0;
};

TEST_F(CpuPoorAndRich, CpuOnlyPodAvoidsTheNodeWhoseGpusNeedItsCpu) {
  auto p = MakeCafgd();
  Learn(*p);
  // n0: 16 cores feed all 4000 free milli; after 8 cores, only 2000: 0.75 * 2000 short.
  EXPECT_EQ(PrimaryScore(*p, Pod(8000), c_, n0_), Sigmoid100(-1500));  // 18
  EXPECT_EQ(PrimaryScore(*p, Pod(8000), c_, n1_), 50);
  // Through the scheduler, with n0 first in the tie-break order.
  auto s = Scheduler::Create(&c_, std::move(p), {n0_, n1_});
  ASSERT_TRUE(s.has_value());
  Rng rng(1);
  auto placed = s->Schedule(Pod(8000), rng);
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed->node, n1_);
  // FGD's measure alone (cpu_weight 0) sees no difference, so the tie-break order decides.
  auto plain = MakeCafgd({{"cpu_weight", "0"}});
  Learn(*plain);
  EXPECT_EQ(PrimaryScore(*plain, Pod(8000), c_, n0_), 50);
  EXPECT_EQ(PrimaryScore(*plain, Pod(8000), c_, n1_), 50);
}

TEST_F(CpuPoorAndRich, GpuPodFillsTheCpuPoorNodeWhenItsCpuStaysSufficient) {
  auto p = MakeCafgd();
  Learn(*p);
  // A (1 GPU, 4 cores) pod at the workload's ratio strands nothing on either node; FGD's part:
  // the CPU-only spec's 0.25 * 1000 less free milli on either node.
  EXPECT_EQ(PrimaryScore(*p, Pod(4000, 1, 1000), c_, n0_), Sigmoid100(250));
  EXPECT_EQ(PrimaryScore(*p, Pod(4000, 1, 1000), c_, n1_), Sigmoid100(250));
  // A CPU-heavy GPU pod (12 cores): on n0 the 4 cores left feed 1000 of the 3000 free milli.
  EXPECT_EQ(PrimaryScore(*p, Pod(12000, 1, 1000), c_, n0_), Sigmoid100(250 - 0.75 * 2000));
  EXPECT_EQ(PrimaryScore(*p, Pod(12000, 1, 1000), c_, n1_), Sigmoid100(250));
}

TEST(Cafgd, FlexiblePodPaysForAModelThatRestrictedPodsNeed) {
  // n0: two GPUs of model 0 ("T4"), n1: two of model 1. Learned: half the GPU demand may only use
  // model 0, so model 0's pressure is 4000 * 0.5 / 2000 = 1 and its cost min(1, 1)^2 = 1 per milli.
  Cluster c;
  const NodeId n0 = *c.AddNode(MakeNode("n0", 64000, 256000, 2, 0));
  const NodeId n1 = *c.AddNode(MakeNode("n1", 64000, 256000, 2, 1));
  PodRequest t4_only = Pod(1000, 1, 1000);
  t4_only.models = ModelSet::Of(0);
  const PodRequest flexible = Pod(1000, 1, 1000);
  for (double scarcity : {0.0, 1.0}) {
    auto p = MakeCafgd({{"scarcity", scarcity == 0 ? "0" : "1"}});
    p->observers[0]->Observe(t4_only);
    p->observers[0]->Observe(flexible);
    // On n1 the model-0-only spec sees all free milli as fragment: 0.5 * 1000 less of it.
    EXPECT_EQ(PrimaryScore(*p, flexible, c, n1), Sigmoid100(500));
    // On n0 nothing changes for FGD's measure; the model cost is 1000 * 1.
    EXPECT_EQ(PrimaryScore(*p, flexible, c, n0), Sigmoid100(-1000 * scarcity));
    // The restricted pod pays the same cost wherever it goes (only model 0 is allowed).
    EXPECT_EQ(PrimaryScore(*p, t4_only, c, n0), Sigmoid100(-1000 * scarcity));
  }
}

// Model pressure is kept between decisions while the cluster stays as it is, and follows it
// when a reservation changes the free milli: with one model-1 GPU taken, model 0's pressure is
// 3000 * 0.5 / 2000 = 0.75 and its cost 0.75^2.
TEST(Cafgd, ModelPressureFollowsTheClusterAfterAReservation) {
  Cluster c;
  const NodeId n0 = *c.AddNode(MakeNode("n0", 64000, 256000, 2, 0));
  const NodeId n1 = *c.AddNode(MakeNode("n1", 64000, 256000, 2, 1));
  PodRequest t4_only = Pod(1000, 1, 1000);
  t4_only.models = ModelSet::Of(0);
  const PodRequest flexible = Pod(1000, 1, 1000);
  auto p = MakeCafgd();
  p->observers[0]->Observe(t4_only);
  p->observers[0]->Observe(flexible);
  EXPECT_EQ(PrimaryScore(*p, flexible, c, n0), Sigmoid100(-1000));
  EXPECT_EQ(PrimaryScore(*p, flexible, c, n0), Sigmoid100(-1000));  // the same state again
  ASSERT_TRUE(c.Reserve(1, flexible, Placement{n1, 1}).ok());
  EXPECT_EQ(PrimaryScore(*p, flexible, c, n0), Sigmoid100(-1000 * 0.75 * 0.75));
  ASSERT_TRUE(c.Unreserve(1));
  EXPECT_EQ(PrimaryScore(*p, flexible, c, n0), Sigmoid100(-1000));
}

// A small cluster and a random pod stream with constraints, sharing and CPU-only pods.
struct Stream {
  Cluster cluster;
  std::vector<PodRequest> pods;
};

Stream MakeStream(uint64_t seed, size_t count) {
  Stream s;
  for (int i = 0; i < 12; ++i) {
    (void)s.cluster.AddNode(MakeNode("n" + std::to_string(i), 8000 + 8000 * (i % 4), 256000,
                                     1 << (i % 3), static_cast<ModelId>(i % 2)));
  }
  Rng rng(seed);
  for (size_t i = 0; i < count; ++i) {
    PodRequest r = Pod(1000 * static_cast<int64_t>(1 + rng.UniformInt(8)));
    const uint64_t kind = rng.UniformInt(4);
    if (kind == 1) {
      r.num_gpus = 1;
      r.gpu_milli = 100 * static_cast<int32_t>(1 + rng.UniformInt(9));
    } else if (kind >= 2) {
      r.num_gpus = 1 + static_cast<int32_t>(rng.UniformInt(2));
      r.gpu_milli = 1000;
    }
    if (r.num_gpus > 0 && rng.UniformInt(3) == 0) r.models = ModelSet::Of(0);
    s.pods.push_back(r);
  }
  return s;
}

std::vector<Placement> Replay(Stream s, std::unique_ptr<Policy> policy) {
  auto sched = Scheduler::Create(&s.cluster, std::move(policy));
  EXPECT_TRUE(sched.has_value());
  Rng rng(3);
  std::vector<Placement> out;
  for (size_t i = 0; i < s.pods.size(); ++i) {
    sched->ObservePod(s.pods[i]);
    auto p = sched->Schedule(s.pods[i], rng);
    if (!p) {
      out.push_back(Placement{~NodeId{0}, 0});
      continue;
    }
    EXPECT_TRUE(sched->Reserve(i, s.pods[i], *p).ok());
    out.push_back(*p);
  }
  return out;
}

TEST(Cafgd, DecisionsOnAPrefixIgnoreLaterPods) {
  const Stream base = MakeStream(5, 120);
  const std::vector<Placement> full = Replay(base, MakeCafgd());
  for (size_t prefix : {10u, 40u, 80u}) {
    Stream changed = base;
    const Stream other = MakeStream(99, 120);
    for (size_t i = prefix; i < changed.pods.size(); ++i) changed.pods[i] = other.pods[i];
    const std::vector<Placement> again = Replay(changed, MakeCafgd());
    for (size_t i = 0; i < prefix; ++i) EXPECT_EQ(again[i], full[i]) << "pod " << i;
    // The altered pods are placed differently, so the comparison above is not vacuous.
    EXPECT_NE(
        std::vector<Placement>(again.begin() + static_cast<std::ptrdiff_t>(prefix), again.end()),
        std::vector<Placement>(full.begin() + static_cast<std::ptrdiff_t>(prefix), full.end()));
  }
}

TEST(Cafgd, IgnoresTheTargetWorkloadItIsGiven) {
  const Stream base = MakeStream(8, 100);
  const std::vector<WorkloadSpec> future = {Spec(2000, 1, 300, 0.6), Spec(30000, 2, 1000, 0.4)};
  EXPECT_EQ(Replay(base, MakeCafgd({}, future)), Replay(base, MakeCafgd()));
  // The diagnostic switch given_workload=1 does use it.
  EXPECT_NE(Replay(base, MakeCafgd({{"given_workload", "1"}}, future)), Replay(base, MakeCafgd()));
}

TEST(Cafgd, OptionsAreChecked) {
  PolicyArgs args;
  args.params["cpu_weight"] = "-1";
  EXPECT_FALSE(BuiltinPolicies().Create("cafgd", args).has_value());
  args.params = {{"colour", "red"}};
  auto bad = BuiltinPolicies().Create("cafgd", args);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("'colour'"), std::string::npos);
  args.params = {{"scarcity", "0.5"}, {"prior", "2"}};
  EXPECT_TRUE(BuiltinPolicies().Create("cafgd", args).has_value());
}

}  // namespace
}  // namespace vgpu::sched
