#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include "sched/registry.h"
#include "sched/test_util.h"
#include "sched/workload.h"

namespace vgpu::sched {
namespace {

using testing::MakeNode;
using testing::On;
using testing::Pod;

std::unique_ptr<Policy> Make(const std::string& name, std::vector<WorkloadSpec> m = {}) {
  PolicyArgs args;
  args.target_workload = std::move(m);
  return std::move(*BuiltinPolicies().Create(name, args));
}

TEST(Scheduler, TiesGoToTheNodeOrder) {
  Cluster c;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(c.AddNode(MakeNode("n" + std::to_string(i), 8000, 8000, 2)).has_value());
  auto s = Scheduler::Create(&c, Make("bestfit"), {2, 0, 1});
  ASSERT_TRUE(s.has_value());
  Rng rng(1);
  EXPECT_EQ(s->Schedule(Pod(1000, 1, 500), rng)->node, 2u);
  auto id_order = Scheduler::Create(&c, Make("bestfit"));
  EXPECT_EQ(id_order->Schedule(Pod(1000, 1, 500), rng)->node, 0u);
}

TEST(Scheduler, RejectsBadOrdersAndReportsNoFit) {
  Cluster c;
  ASSERT_TRUE(c.AddNode(MakeNode("n", 8000, 8000, 1)).has_value());
  EXPECT_FALSE(Scheduler::Create(&c, Make("bestfit"), {0, 0}).has_value());
  EXPECT_FALSE(Scheduler::Create(&c, Make("bestfit"), {3}).has_value());
  EXPECT_FALSE(Scheduler::Create(nullptr, Make("bestfit")).has_value());
  auto s = Scheduler::Create(&c, Make("bestfit"));
  Rng rng(1);
  auto none = s->Schedule(Pod(1000, 2, 1000), rng);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s->Schedule(Pod(-1), rng).error().code(), StatusCode::kInvalidArgument);
}

TEST(Scheduler, ReserveUnreserveAndLateNodes) {
  Cluster c;
  ASSERT_TRUE(c.AddNode(MakeNode("a", 8000, 8000, 1)).has_value());
  auto s = Scheduler::Create(&c, Make("bestfit"));
  Rng rng(1);
  auto p = s->Schedule(Pod(8000, 1, 1000), rng);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(s->Reserve(7, Pod(8000, 1, 1000), *p).ok());
  EXPECT_FALSE(s->Schedule(Pod(1000), rng).has_value());
  // A node added later joins the end of the order.
  ASSERT_TRUE(c.AddNode(MakeNode("b", 8000, 8000, 1)).has_value());
  EXPECT_EQ(s->Schedule(Pod(1000), rng)->node, 1u);
  EXPECT_TRUE(s->Unreserve(7));
  EXPECT_FALSE(s->Unreserve(7));
  EXPECT_EQ(c.cpu_free(0), 8000);
}

TEST(Scheduler, FilterAndNormalizedScoresForAnExtender) {
  Cluster c;
  ASSERT_TRUE(c.AddNode(MakeNode("a", 64000, 8000, 2)).has_value());
  ASSERT_TRUE(c.AddNode(MakeNode("b", 64000, 8000, 2)).has_value());
  ASSERT_TRUE(c.AddNode(MakeNode("c", 1000, 8000, 2)).has_value());
  ASSERT_TRUE(c.Reserve(1, Pod(0, 1, 400), On(1, {0})).ok());
  auto s = Scheduler::Create(&c, Make("bestfit"));
  std::vector<NodeId> all = {0, 1, 2};
  EXPECT_EQ(s->FilterNodes(Pod(8000, 1, 500), all), (std::vector<NodeId>{0, 1}));
  Rng rng(1);
  std::vector<NodeId> two = {0, 1};
  // Raw 68 and 71 -> min-max normalized to 0 and 100.
  EXPECT_EQ(s->ScoreNodes(Pod(8000, 1, 500), two, rng), (std::vector<int64_t>{0, 100}));
}

// Cached scores always equal scores computed from scratch by a fresh policy instance.
TEST(Scheduler, CachedScoresMatchFreshScores) {
  for (const std::string name : {"bestfit", "fgd", "packing", "clustering", "hami-binpack"}) {
    Cluster c;
    for (int i = 0; i < 12; ++i) {
      ASSERT_TRUE(
          c.AddNode(MakeNode("n" + std::to_string(i), 32000, 64000, 1 + i % 4)).has_value());
    }
    std::vector<PodRequest> kinds = {Pod(2000, 1, 300), Pod(4000, 1, 1000), Pod(1000),
                                     Pod(8000, 2, 1000), Pod(1000, 1, 650)};
    auto m = TypicalWorkload(kinds, nullptr);
    auto s = Scheduler::Create(&c, Make(name, m));
    ASSERT_TRUE(s.has_value());
    Rng rng(3);
    std::vector<NodeId> all;
    for (NodeId n = 0; n < c.num_nodes(); ++n) all.push_back(n);
    for (int i = 0; i < 80; ++i) {
      const PodRequest& r = kinds[rng.UniformInt(kinds.size())];
      auto fresh = Make(name, m);
      std::vector<int64_t> expected;
      for (NodeId n : all) expected.push_back(fresh->score->Score(r, c, n));
      fresh->score->NormalizeScores(expected);
      EXPECT_EQ(s->ScoreNodes(r, all, rng), expected) << name << " step " << i;
      auto p = s->Schedule(r, rng);
      if (p) {
        ASSERT_TRUE(s->Reserve(static_cast<PodKey>(i), r, *p).ok());
      }
      if (i % 7 == 6) s->Unreserve(static_cast<PodKey>(i - 3));
    }
    EXPECT_GT(s->stats().cache_hits, 0u) << name;
  }
}

}  // namespace
}  // namespace vgpu::sched
