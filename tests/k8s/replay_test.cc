// The extender's production path keeps the simulator's decisions: a slice of the bundled trace
// (every 20th node, the pods `vgpu sim` sends for seed 42 up to 100% arrived, CPU-only ones
// included, in HAMi's resource names) replayed through the extender over HTTP as kube-scheduler
// drives it (trace_replay.h) lands every pod where the placement engine in-process puts it,
// in the narrow and the all-feasible filter modes. The full trace is bench_extender_replay.
#include <gtest/gtest.h>

#include "harness.h"
#include "sim/snapshot.h"
#include "sim/trace.h"
#include "trace_replay.h"

namespace vgpu::k8s::testing {
namespace {

struct Slice {
  sched::ModelRegistry models;
  sim::SnapshotInput input;
  ReplaySetup setup;
  sched::PolicyArgs args;
};

std::unique_ptr<Slice> LoadSlice(int every) {
  auto s = std::make_unique<Slice>();
  auto nodes = sim::LoadNodeList("data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv", &s->models);
  auto pods = sim::LoadPodList("data/alibaba-gpu-v2023/openb_pod_list_default.csv", s->models);
  EXPECT_TRUE(nodes.has_value() && pods.has_value());
  std::vector<sched::NodeSpec> some;
  for (size_t i = 0; i < nodes->size(); i += static_cast<size_t>(every))
    some.push_back((*nodes)[i]);
  std::vector<std::pair<std::string, sched::PodRequest>> list;
  for (const auto& p : *pods) list.emplace_back(p.name, p.request);
  s->input = sim::MakeSnapshotInput(std::move(some), list, &s->models, "slice");
  s->setup.nodes = s->input.nodes;
  s->setup.models = &s->models;
  Rng rng(42);
  s->setup.plan = sim::PlanArrivals(s->input, 1.3, rng);
  s->args.models = &s->models;
  s->args.target_workload = s->input.target_workload;
  return s;
}

struct Outcome {
  ReplayResult replay;
  ReferenceResult reference;
};

Outcome Replay(const Slice& s, const std::string& policy, FilterMode mode, bool kube_scores) {
  FakeApiServer api;
  LoadReplayNodes(s.setup, &api);
  StateOptions so;
  so.policy = policy;
  so.filter_mode = mode;
  ExtenderHarness h(&api, so);
  EXPECT_TRUE(h.Start().ok());
  ReplayOptions ro;
  ro.kube.default_scores = kube_scores;
  auto replay = RunReplay(s.setup, &api, h.port(), ro);
  EXPECT_TRUE(replay.has_value()) << replay.error().ToString();
  EXPECT_TRUE(h.state().CheckConsistency().ok()) << h.state().CheckConsistency().ToString();
  auto reference = RunReference(s.setup, policy, s.args, 42, 100);
  EXPECT_TRUE(reference.has_value());
  h.Stop();
  return {replay.value_or(ReplayResult{}), reference.value_or(ReferenceResult{})};
}

size_t Differences(const Outcome& o) {
  size_t diff = o.replay.chosen.size() == o.reference.chosen.size() ? 0 : 1000000;
  for (size_t i = 0; i < std::min(o.replay.chosen.size(), o.reference.chosen.size()); ++i) {
    diff += o.replay.chosen[i] != o.reference.chosen[i] ? 1 : 0;
  }
  return diff;
}

TEST(ExtenderReplay, NarrowModeMakesTheEnginesDecisions) {
  auto slice = LoadSlice(20);
  for (const char* policy : {"default", "bestfit"}) {
    const Outcome o = Replay(*slice, policy, FilterMode::kNarrow, /*kube_scores=*/true);
    EXPECT_GT(o.replay.pods, 300) << policy;
    EXPECT_GT(o.replay.cpu_only, 20) << policy;
    EXPECT_GT(o.replay.failed, 0) << policy;  // the slice is full at 100%
    EXPECT_EQ(o.replay.bind_errors, 0) << policy;
    // One node per filter: kube-scheduler's own scores have no say.
    EXPECT_EQ(o.replay.prioritized, 0) << policy;
    EXPECT_EQ(Differences(o), 0u) << policy;
    EXPECT_EQ(o.replay.unallocated, o.reference.unallocated) << policy;
  }
}

TEST(ExtenderReplay, AllModeRanksTheEnginesChoiceFirst) {
  auto slice = LoadSlice(20);
  const Outcome o = Replay(*slice, "default", FilterMode::kAll, /*kube_scores=*/false);
  EXPECT_GT(o.replay.prioritized, 200);
  EXPECT_EQ(Differences(o), 0u);
  // With kube-scheduler's own scores added (weight 1), they decide among the nodes: the
  // decisions part, and the result is within a few points.
  const Outcome k = Replay(*slice, "default", FilterMode::kAll, /*kube_scores=*/true);
  EXPECT_GT(Differences(k), 10u);
  EXPECT_NEAR(k.replay.unallocated, k.reference.unallocated, 5.0);
}

}  // namespace
}  // namespace vgpu::k8s::testing
