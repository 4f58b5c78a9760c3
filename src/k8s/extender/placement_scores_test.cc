// Extender scores on one scale: the node the placement engine would choose gets 10 in a cluster
// whose nodes have GPUs of different sizes and models, for every policy; the mapping itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "k8s/extender/extender_scores.h"
#include "k8s/extender/placement_state.h"
#include "sched/registry.h"
#include "sched/scheduler.h"

namespace vgpu::k8s {
namespace {

TEST(ExtenderScores, ChoiceGetsTenOthersFollowThePolicy) {
  const std::vector<int64_t> raw = {40, 90, 90, 10, 70, 0};
  const std::vector<uint8_t> feasible = {1, 1, 1, 1, 1, 0};
  const std::vector<uint32_t> rank = {5, 3, 1, 0, 2, 4};
  const size_t choice = EngineChoice(raw, feasible, rank);
  EXPECT_EQ(choice, 2u);  // 90, and a better tie-break rank than node 1
  const std::vector<int64_t> s = ExtenderPriorities(raw, feasible, choice);
  EXPECT_EQ(s, (std::vector<int64_t>{3, 9, 10, 0, 6, 0}));  // floor(9 * (raw - 10) / 80)
  // Equal raw scores: the choice 10, the rest 9.
  const std::vector<int64_t> same = {5, 5, 5};
  const std::vector<uint8_t> all = {1, 1, 1};
  EXPECT_EQ(ExtenderPriorities(same, all, 1), (std::vector<int64_t>{9, 10, 9}));
  // Extreme raw values do not overflow.
  const std::vector<int64_t> wide = {INT64_MIN + 1, INT64_MAX, 0};
  EXPECT_EQ(ExtenderPriorities(wide, all, 1), (std::vector<int64_t>{0, 10, 4}));
  const std::vector<uint8_t> none = {0, 0, 0};
  EXPECT_EQ(EngineChoice(same, none, rank), kNoChoice);
}

TEST(ExtenderScores, TieOrderKeepsEachNodesPlace) {
  std::vector<std::string> names;
  for (int i = 0; i < 50; ++i) names.push_back("node-" + std::to_string(i));
  const std::vector<uint32_t> all = NodeTieOrder(names, 42);
  ASSERT_EQ(all.size(), 50u);
  std::vector<uint32_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < 50; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_NE(all, sorted);  // not the name order
  // Without every third node the others keep their relative order.
  std::vector<std::string> some;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i % 3 != 0) some.push_back(names[i]);
  }
  std::vector<std::string> expect, got;
  for (uint32_t id : all) {
    if (id % 3 != 0) expect.push_back(names[id]);
  }
  for (uint32_t id : NodeTieOrder(some, 42)) got.push_back(some[id]);
  EXPECT_EQ(got, expect);
  EXPECT_NE(NodeTieOrder(names, 7), all);
}

constexpr const char* kH100 = "NVIDIA H100 80GB HBM3";
constexpr const char* kA100 = "NVIDIA A100-SXM4-40GB";

InventoryGpu Gpu(const std::string& node, int i, const char* model, int64_t mem) {
  return {node + "-GPU-" + std::to_string(i), i, model, mem, 10, true, 0, {}};
}

// The cluster of the issue: an H100 + A100-40GB node, a 2xH100 node, a half-used A100 node.
std::map<std::string, NodeInventory> MixedNodes() {
  std::map<std::string, NodeInventory> nodes;
  nodes["mixed"].gpus = {Gpu("mixed", 0, kH100, 81920), Gpu("mixed", 1, kA100, 40960)};
  nodes["h100x2"].gpus = {Gpu("h100x2", 0, kH100, 81920), Gpu("h100x2", 1, kH100, 81920)};
  nodes["a100-half"].gpus = {Gpu("a100-half", 0, kA100, 40960), Gpu("a100-half", 1, kA100, 40960)};
  return nodes;
}

PodGpuRequest Req(std::optional<int> cores, std::optional<int64_t> mem, std::optional<int> pct,
                  HostResources host) {
  PodGpuRequest r;
  ContainerGpuRequest c;
  c.name = "main";
  c.count = 1;
  c.cores = cores;
  c.memory_mib = mem;
  c.memory_percent = pct;
  r.containers.push_back(c);
  r.host = host;
  return r;
}

// What the engine chooses, computed here from the rule the contract states: per node the best
// raw score over the memory classes that fit, the highest such score, ties to the tie order.
std::string EngineChoiceOf(const std::string& policy, const PodGpuRequest& pod,
                           const PodGpuRequest& placed, const HostResources& alloc) {
  sched::ModelRegistry models;
  sched::Cluster cluster;
  std::vector<std::string> names;
  for (const auto& [name, inv] : MixedNodes()) {
    sched::NodeSpec spec{name, alloc.cpu_milli, alloc.memory_mib, {}};
    for (const InventoryGpu& g : inv.gpus) {
      spec.gpus.push_back(
          {*models.Intern(g.model + "/" + std::to_string(g.memory_mib)), g.memory_mib});
    }
    EXPECT_TRUE(cluster.AddNode(spec).has_value());
    names.push_back(name);
  }
  sched::PolicyArgs args;
  args.models = &models;
  auto made = sched::BuiltinPolicies().Create(policy, args);
  EXPECT_TRUE(made.has_value());
  const std::vector<uint32_t> tie = NodeTieOrder(names, 42);
  auto s = sched::Scheduler::Create(&cluster, std::move(*made),
                                    std::vector<sched::NodeId>(tie.begin(), tie.end()));
  EXPECT_TRUE(s.has_value());
  const auto class_of = [&](int64_t cap) {
    sched::ModelSet set;
    for (size_t m = 0; m < models.size(); ++m) {
      if (models.Name(static_cast<sched::ModelId>(m)).ends_with("/" + std::to_string(cap))) {
        set.Add(static_cast<sched::ModelId>(m));
      }
    }
    return set;
  };
  const auto request_on = [&](const PodGpuRequest& r, int64_t cap) {
    auto shape = PodShapeOn(r, cap, RequestOptions{});
    sched::PodRequest e;
    e.cpu_milli = r.host.cpu_milli;
    e.memory_mib = r.host.memory_mib;
    e.num_gpus = shape->num_gpus;
    e.gpu_milli = shape->milli;
    e.gpu_memory_mib = shape->memory_mib;
    e.models = class_of(cap);
    return e;
  };
  // The half-used node: one A100 carries the placed pod.
  sched::PodRequest placed_seen = request_on(placed, 40960);
  placed_seen.models = sched::ModelSet();
  s->ObservePod(placed_seen);
  sched::PodRequest gpus_only = request_on(placed, 40960);
  gpus_only.cpu_milli = gpus_only.memory_mib = 0;
  EXPECT_TRUE(s->Reserve(1, gpus_only, sched::Placement{*cluster.FindNode("a100-half"), 1}).ok());
  sched::PodRequest seen = request_on(pod, 40960);
  seen.models = sched::ModelSet();
  s->ObservePod(seen);
  Rng rng(42);
  std::vector<int64_t> raw(names.size(), 0);
  std::vector<uint8_t> feasible(names.size(), 0);
  for (int64_t cap : {40960, 81920}) {
    const sched::PodRequest e = request_on(pod, cap);
    std::vector<sched::NodeId> fit = s->FilterNodes(e, std::vector<sched::NodeId>{0, 1, 2});
    const std::vector<int64_t> scores = s->RawScores(e, fit, rng);
    for (size_t k = 0; k < fit.size(); ++k) {
      if (feasible[fit[k]] == 0 || scores[k] > raw[fit[k]]) raw[fit[k]] = scores[k];
      feasible[fit[k]] = 1;
    }
  }
  std::vector<uint32_t> rank(names.size());
  for (sched::NodeId n = 0; n < names.size(); ++n) rank[n] = s->TieRank(n);
  const size_t choice = EngineChoice(raw, feasible, rank);
  return choice == kNoChoice ? "" : names[choice];
}

TEST(ExtenderScores, MixedGpuSizesThePreferredNodeScoresTenForEveryPolicy) {
  const HostResources alloc{64000, 524288};
  const PodGpuRequest placed = Req(50, 20000, std::nullopt, {});
  const std::vector<PodGpuRequest> pods = {
      Req(30, 8000, std::nullopt, {4000, 16384}),  // gpumem in MiB
      Req(25, std::nullopt, 25, {8000, 32768}),    // gpumem-percentage
      Req(std::nullopt, 30000, std::nullopt, {}),  // memory only: compute in proportion
  };
  const std::vector<std::string> nodes = {"mixed", "h100x2", "a100-half"};
  int policies = 0;
  for (const std::string& policy : sched::BuiltinPolicies().Names()) {
    StateOptions o;
    o.policy = policy;
    if (!PlacementState::Create(o)) continue;  // fgd needs the workload in advance
    ++policies;
    for (size_t p = 0; p < pods.size(); ++p) {
      // A fresh cluster per pod, as the reference builds it: pods are not placed in between.
      for (FilterMode mode : {FilterMode::kAll, FilterMode::kNarrow}) {
        o.filter_mode = mode;
        auto state = PlacementState::Create(o);
        ASSERT_TRUE(state.has_value());
        PlacementState& s = **state;
        for (const auto& [name, inv] : MixedNodes()) s.UpsertNode(name, inv, alloc);
        ASSERT_TRUE(s.Assume("u0", "ns", "placed", placed, "a100-half").has_value());
        const std::string uid = "p" + std::to_string(p);
        const std::string expect = EngineChoiceOf(policy, pods[p], placed, alloc);
        if (mode == FilterMode::kAll) {
          const std::vector<int64_t> sc = s.Score(pods[p], nodes, PodRef{uid, "ns", uid});
          ASSERT_EQ(sc.size(), 3u);
          EXPECT_EQ(std::count(sc.begin(), sc.end(), 10), 1) << policy << " pod " << p;
          const auto top = static_cast<size_t>(std::max_element(sc.begin(), sc.end()) - sc.begin());
          // (random draws its node from its own generator)
          if (policy != "random") {
            EXPECT_EQ(nodes[top], expect)
                << policy << " pod " << p << " scores " << sc[0] << "," << sc[1] << "," << sc[2];
          }
        } else {
          // The narrow filter answers that node alone.
          const FilterResult f = s.Filter(pods[p], nodes, PodRef{uid, "ns", uid});
          ASSERT_EQ(f.feasible.size(), 1u) << policy;
          EXPECT_EQ(f.narrowed, 2u) << policy;
          if (policy != "random") {
            EXPECT_EQ(f.feasible[0], expect) << policy << " pod " << p;
          }
        }
      }
    }
  }
  EXPECT_GE(policies, 9);
}

}  // namespace
}  // namespace vgpu::k8s
