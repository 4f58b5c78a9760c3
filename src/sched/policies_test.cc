// Each policy's score and GPU choice on small cases worked out by hand (formulas in the
// policy_*.cc headers).
#include <gtest/gtest.h>

#include <map>

#include "sched/policies.h"
#include "sched/registry.h"
#include "sched/scheduler.h"
#include "sched/test_util.h"

namespace vgpu::sched {
namespace {

using testing::MakeNode;
using testing::On;
using testing::Pod;

std::unique_ptr<Policy> Make(const std::string& name, std::vector<WorkloadSpec> m = {}) {
  PolicyArgs args;
  args.target_workload = std::move(m);
  auto p = BuiltinPolicies().Create(name, args);
  EXPECT_TRUE(p.has_value()) << name;
  return std::move(*p);
}

// n0: idle, 64 cores, 2 GPUs. n1: same, with a 400-milli pod on GPU 0.
class TwoNodes : public ::testing::Test {
 protected:
  void SetUp() override {
    n0_ = *c_.AddNode(MakeNode("n0", 64000, 256000, 2));
    n1_ = *c_.AddNode(MakeNode("n1", 64000, 256000, 2));
    ASSERT_TRUE(c_.Reserve(1, Pod(0, 1, 400), On(n1_, {0})).ok());
  }
  int64_t Score(Policy& p, const PodRequest& r, NodeId n) { return p.score->Score(r, c_, n); }
  GpuSet Gpus(Policy& p, const PodRequest& r, NodeId n) {
    Rng rng(1);
    return p.gpus->SelectGpus(r, c_, n, rng);
  }
  Cluster c_;
  NodeId n0_ = 0, n1_ = 0;
};

TEST_F(TwoNodes, BestFit) {
  auto p = Make("bestfit");
  // 100 * (1 - [0.5 * 56000/128000 + 0.5 * 1500/8000]) = 68.75
  EXPECT_EQ(Score(*p, Pod(8000, 1, 500), n0_), 68);
  // gpu free 1600: 100 * (1 - [0.21875 + 0.5 * 1100/8000]) = 71.25
  EXPECT_EQ(Score(*p, Pod(8000, 1, 500), n1_), 71);
  EXPECT_EQ(Gpus(*p, Pod(8000, 1, 500), n1_), GpuSet{0b01});  // least free that fits: 600
  EXPECT_EQ(Gpus(*p, Pod(8000, 1, 700), n1_), GpuSet{0b10});
  EXPECT_EQ(Gpus(*p, Pod(8000, 2, 1000), n0_), GpuSet{0b11});
}

TEST_F(TwoNodes, DotProd) {
  auto p = Make("dotprod");
  // f = [0.5, 0.25], q = [0.0625, 0.0625]: 100 * (1 - 0.046875 / 2) = 97.66
  EXPECT_EQ(Score(*p, Pod(8000, 1, 500), n0_), 97);
  // f = [0.5, 0.2]: 100 * (1 - (0.03125 + 0.0125) / 2) = 97.81
  EXPECT_EQ(Score(*p, Pod(8000, 1, 500), n1_), 97);
  // f = [0.5, 0.25], q = [0.5, 0.25]: 100 * (1 - 0.3125 / 2) = 84.375
  EXPECT_EQ(Score(*p, Pod(64000, 2, 1000), n0_), 84);
  EXPECT_EQ(Score(*p, Pod(64001), n0_), 0);
}

TEST_F(TwoNodes, Packing) {
  auto p = Make("packing");
  EXPECT_EQ(Score(*p, Pod(8000, 1, 500), n0_), 31);  // idle node: max(33 - 2, 2)
  EXPECT_EQ(Score(*p, Pod(8000, 1, 500), n1_), 94);  // used GPU with 600 free: 100 - 60/10
  EXPECT_EQ(Score(*p, Pod(8000, 1, 700), n1_), 49);  // needs the idle GPU: 50 - 1
  EXPECT_EQ(Score(*p, Pod(8000, 2, 1000), n1_), 0);  // does not fit (filtered in practice)
  EXPECT_EQ(Score(*p, Pod(8000), n1_), 0);           // CPU-only
}

TEST_F(TwoNodes, Clustering) {
  auto p = Make("clustering");
  // Idle node, 2000 free: band 25 + 25 * 6000 / 8000 = 25 + 18
  EXPECT_EQ(Score(*p, Pod(1000, 1, 300), n0_), 43);
  // Node with only sharing pods, 1600 free: 75 + 25 * 6400 / 8000
  EXPECT_EQ(Score(*p, Pod(1000, 1, 300), n1_), 95);
  // A 1-GPU pod there: only other classes: 0 + 20
  EXPECT_EQ(Score(*p, Pod(1000, 1, 1000), n1_), 20);
  ASSERT_TRUE(c_.Reserve(2, Pod(0, 1, 1000), On(n1_, {1})).ok());
  // Mixed node, 600 free: 50 + 25 * 7400 / 8000
  EXPECT_EQ(Score(*p, Pod(1000, 1, 300), n1_), 73);
  EXPECT_EQ(Score(*p, Pod(1000), n1_), 0);
}

TEST_F(TwoNodes, HamiBinpackAndSpread) {
  auto bin = Make("hami-binpack");
  auto spread = Make("hami-spread");
  // n1: 10 * (1/20 slots + 400/2000 core + 400/2000 memory) = 4.5
  EXPECT_EQ(Score(*bin, Pod(1000, 1, 300), n1_), 4500000);
  EXPECT_EQ(Score(*spread, Pod(1000, 1, 300), n1_), -4500000);
  EXPECT_EQ(Score(*bin, Pod(1000, 1, 300), n0_), 0);
  // Device scores for 300 milli: GPU0 10*(2/10 + 0.7 + 0.7) = 16, GPU1 10*(1/10 + 0.3 + 0.3) = 7.
  EXPECT_EQ(Gpus(*bin, Pod(1000, 1, 300), n1_), GpuSet{0b01});
  EXPECT_EQ(Gpus(*spread, Pod(1000, 1, 300), n1_), GpuSet{0b10});
  EXPECT_EQ(bin->fit.max_pods_per_gpu, 10);
}

TEST(Random, PicksOneFeasibleNodeUniformly) {
  Cluster c;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(c.AddNode(MakeNode("n" + std::to_string(i), 8000, 8000, 1)).has_value());
  ASSERT_TRUE(c.Reserve(1, Pod(0, 1, 1000), On(3, {0})).ok());  // n3 cannot take a GPU pod
  auto s = Scheduler::Create(&c, Make("random"));
  ASSERT_TRUE(s.has_value());
  Rng rng(5);
  std::map<NodeId, int> hits;
  for (int i = 0; i < 3000; ++i) hits[s->Schedule(Pod(1000, 1, 500), rng)->node]++;
  EXPECT_EQ(hits.count(3), 0u);
  for (NodeId n = 0; n < 3; ++n) EXPECT_NEAR(hits[n], 1000, 120) << n;
}

// FGD with M = {share 500 milli, 1 core: p = 1}. Node A (16 cores, 2 GPUs) has 800 and 1000 milli
// free; node B is idle.
class FgdCase : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = *c_.AddNode(MakeNode("a", 16000, 64000, 2));
    b_ = *c_.AddNode(MakeNode("b", 16000, 64000, 2));
    ASSERT_TRUE(c_.Reserve(1, Pod(0, 1, 200), On(a_, {0})).ok());
    WorkloadSpec m;
    m.cpu_milli = 1000;
    m.num_gpus = 1;
    m.gpu_milli = 500;
    m.weight = 1;
    policy_ = Make("fgd", {m});
  }
  Cluster c_;
  NodeId a_ = 0, b_ = 0;
  std::unique_ptr<Policy> policy_;
};

TEST_F(FgdCase, ScoreAndGpuChoice) {
  Rng rng(1);
  // Before: both GPUs of A fit the 500 spec, F = 0. 700 on GPU0 leaves 100 (fragment):
  // 100 * sigmoid(-100/1000) = 47.5; on GPU1 it leaves 300: 100 * sigmoid(-0.3) = 42.6.
  EXPECT_EQ(policy_->score->Score(Pod(1000, 1, 700), c_, a_), 47);
  EXPECT_EQ(policy_->gpus->SelectGpus(Pod(1000, 1, 700), c_, a_, rng), GpuSet{0b01});
  // B: either GPU leaves 300: 42, lowest index.
  EXPECT_EQ(policy_->score->Score(Pod(1000, 1, 700), c_, b_), 42);
  EXPECT_EQ(policy_->gpus->SelectGpus(Pod(1000, 1, 700), c_, b_, rng), GpuSet{0b01});
  // A whole GPU on A takes the idle GPU1; GPU0's 800 still fits the spec: no change, 50.
  EXPECT_EQ(policy_->score->Score(Pod(1000, 1, 1000), c_, a_), 50);
  EXPECT_EQ(policy_->gpus->SelectGpus(Pod(1000, 1, 1000), c_, a_, rng), GpuSet{0b10});
}

TEST_F(FgdCase, CpuMatters) {
  // 15 cores leave 1 core: the spec still fits, 50.
  EXPECT_EQ(policy_->score->Score(Pod(15000), c_, a_), 50);
  // 15.5 cores leave 0.5: all 1800 free milli become fragment: 100 * sigmoid(-1.8) = 14.2.
  EXPECT_EQ(policy_->score->Score(Pod(15500), c_, a_), 14);
}

TEST_F(FgdCase, SchedulerPicksLeastFragmentingNode) {
  auto s = Scheduler::Create(&c_, std::move(policy_));
  ASSERT_TRUE(s.has_value());
  Rng rng(1);
  auto p = s->Schedule(Pod(1000, 1, 700), rng);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->node, a_);
  EXPECT_EQ(p->gpus, GpuSet{0b01});
}

TEST(FgdOnline, LearnsFromObservedPodsOnly) {
  Cluster c;
  NodeId a = *c.AddNode(MakeNode("a", 16000, 64000, 2));
  auto p = Make("fgd-online");
  // Nothing observed yet: no fragmentation model, every placement scores 50.
  EXPECT_EQ(p->score->Score(Pod(1000, 1, 700), c, a), 50);
  const uint64_t e0 = p->score->Epoch();
  for (auto& o : p->observers) o->Observe(Pod(1000, 1, 500));
  EXPECT_GT(p->score->Epoch(), e0);
  // Now M = {500 milli}: 700 leaves 300 < 500 on the GPU: 100 * sigmoid(-0.3) = 42.
  EXPECT_EQ(p->score->Score(Pod(1000, 1, 700), c, a), 42);
}

}  // namespace
}  // namespace vgpu::sched
