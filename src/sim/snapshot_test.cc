#include "sim/snapshot.h"

#include <gtest/gtest.h>

#include "common/rng.h"
#include "sim/experiment.h"

namespace vgpu::sim {
namespace {

using sched::NodeSpec;
using sched::PodRequest;

PodRequest Pod(int64_t cpu, int32_t num, int32_t milli) {
  PodRequest r;
  r.cpu_milli = cpu;
  r.num_gpus = num;
  r.gpu_milli = milli;
  return r;
}

// Four 2-GPU nodes (8 GPUs) and ten 500-milli pods (5 GPUs of request).
SnapshotInput SmallInput() {
  std::vector<NodeSpec> nodes;
  for (int i = 3; i >= 0; --i) {
    NodeSpec n;
    n.name = "node-" + std::to_string(i);
    n.cpu_milli = 16000;
    n.memory_mib = 65536;
    n.gpus.assign(2, sched::GpuSpec{0, 0});
    nodes.push_back(n);
  }
  std::vector<std::pair<std::string, PodRequest>> pods;
  for (int i = 9; i >= 0; --i) pods.emplace_back("pod-" + std::to_string(i), Pod(1000, 1, 500));
  return MakeSnapshotInput(std::move(nodes), std::move(pods), nullptr, "small");
}

TEST(Snapshot, InputIsSortedByName) {
  SnapshotInput in = SmallInput();
  EXPECT_EQ(in.nodes.front().name, "node-0");
  EXPECT_EQ(in.target_workload.size(), 1u);
  EXPECT_DOUBLE_EQ(in.target_workload[0].weight, 1.0);
}

TEST(Snapshot, InflationStopsAtTheFirstPodThatWouldPassTheLimit) {
  SnapshotInput in = SmallInput();
  Rng rng(42);
  ArrivalPlan plan = PlanArrivals(in, 1.3, rng);
  // Capacity 8000 milli, limit 10400; the original 10 pods bring 5000, each resampled pod 500:
  // 10 more pods reach 10000, the 11th would pass 10400.
  EXPECT_EQ(plan.pods.size(), 20u);
  ASSERT_EQ(plan.node_order.size(), 4u);
  std::vector<bool> seen(4, false);
  for (auto n : plan.node_order) seen[n] = true;
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 4);
  // Same seed, same plan; another seed, another node order (with overwhelming odds).
  Rng again(42);
  EXPECT_EQ(PlanArrivals(in, 1.3, again).node_order, plan.node_order);
  Rng smaller(42);
  EXPECT_EQ(PlanArrivals(in, 0.5, smaller).pods.size(), 10u);  // never drops original pods
}

TEST(Snapshot, LevelsAverageRowsAndCountFailedPodsAsArrived) {
  SnapshotInput in = SmallInput();
  auto r = RunSnapshot(in, "bestfit", sched::PolicyArgs{}, 1, 1.3);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->pods, 20);
  EXPECT_EQ(r->failed, 4);  // 16 halves fit on 8 GPUs
  // Each pod adds 6.25% of capacity; rows sit at 6.25, 12.5, ... 125%.
  // Level 100 is the row at exactly 100% (16 pods placed): 100% allocated.
  const LevelValue* at100 = nullptr;
  for (const LevelValue& v : r->levels) {
    if (v.arrived_pct == 100) at100 = &v;
  }
  ASSERT_NE(at100, nullptr);
  EXPECT_DOUBLE_EQ(at100->allocated_pct, 100.0);
  // Level 106: the row at 106.25% (17th pod failed) still has 100% allocated.
  // Level 7: no row rounds to 7 -> rows within 6..8 are used (6.25%): 6.25.
  for (const LevelValue& v : r->levels) {
    if (v.arrived_pct == 7) {
      EXPECT_DOUBLE_EQ(v.allocated_pct, 6.25);
    }
    if (v.arrived_pct == 106) {
      EXPECT_DOUBLE_EQ(v.allocated_pct, 100.0);
    }
    EXPECT_LE(v.allocated_pct, 100.0);
  }
  // The last row is at 125%: level 126 still finds it within +-1, 127..130 have no data.
  EXPECT_EQ(r->levels.back().arrived_pct, 126);
}

TEST(Snapshot, DeterministicAcrossThreadCounts) {
  SnapshotInput in = SmallInput();
  ExperimentOptions one;
  one.policies = {"fgd", "random"};
  one.seeds = {1, 2, 3};
  one.threads = 1;
  ExperimentOptions four = one;
  four.threads = 4;
  auto a = RunExperiment(in, one);
  auto b = RunExperiment(in, four);
  ASSERT_TRUE(a.has_value() && b.has_value());
  for (size_t p = 0; p < a->size(); ++p) {
    for (size_t s = 0; s < 3; ++s) {
      const auto& x = (*a)[p].seeds[s].levels;
      const auto& y = (*b)[p].seeds[s].levels;
      ASSERT_EQ(x.size(), y.size());
      for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i].allocated_pct, y[i].allocated_pct);
    }
  }
  PolicySummary sum = Aggregate((*a)[0]);
  EXPECT_NE(FindLevel(sum, 100), nullptr);
  ExperimentOptions bad = one;
  bad.policies = {"nope"};
  EXPECT_FALSE(RunExperiment(in, bad).has_value());
  bad = one;
  bad.params["bestfit"]["x"] = "1";
  EXPECT_FALSE(RunExperiment(in, bad).has_value());  // options for a policy not being run
}

TEST(Experiment, MeanAndSampleSd) {
  Stat s = MeanSd({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.sd, 1.2909944, 1e-6);
  EXPECT_EQ(MeanSd({5}).sd, 0);
}

}  // namespace
}  // namespace vgpu::sim
