// The verdicts PlacementState remembers per request shape must never outlive a change of the
// cluster: every answer equals the one a state without memory gives.
#include <gtest/gtest.h>

#include "common/rng.h"
#include "k8s/extender/placement_state.h"

namespace vgpu::k8s {
namespace {

NodeInventory Gpus(int n, const std::string& prefix, int64_t mem = 81920,
                   const std::string& model = "NVIDIA A100-SXM4-80GB") {
  NodeInventory inv;
  for (int i = 0; i < n; ++i) {
    inv.gpus.push_back({prefix + "-GPU-" + std::to_string(i), i, model, mem, 10, true, 0, {}});
  }
  return inv;
}

PodGpuRequest Req(int count, std::optional<int> cores, std::optional<int64_t> mem,
                  const std::string& container = "main") {
  PodGpuRequest r;
  ContainerGpuRequest c;
  c.name = container;
  c.count = count;
  c.cores = cores;
  c.memory_mib = mem;
  r.containers.push_back(c);
  return r;
}

std::unique_ptr<PlacementState> Make(size_t memo_shapes) {
  StateOptions o;
  o.policy = "bestfit";
  o.memo_shapes = memo_shapes;
  auto s = PlacementState::Create(std::move(o));
  EXPECT_TRUE(s.has_value());
  return std::move(*s);
}

TEST(PlacementVerdicts, EveryChangeIsSeenByTheNextFilterAndScore) {
  auto s = Make(32);
  s->UpsertNode("a", Gpus(1, "a"));
  s->UpsertNode("b", Gpus(1, "b"));
  const PodGpuRequest big = Req(1, 60, 40000);
  EXPECT_EQ(s->Filter(big, {"a", "b"}).feasible, (std::vector<std::string>{"a", "b"}));
  const uint64_t v0 = s->version();
  // A decision fills a: the same shape, asked again, no longer fits there.
  auto t = s->Assume("u1", "ns", "p1", big, "a");
  ASSERT_TRUE(t.has_value());
  EXPECT_GT(s->version(), v0);
  FilterResult f = s->Filter(big, {"a", "b"});
  EXPECT_EQ(f.feasible, (std::vector<std::string>{"b"}));
  EXPECT_EQ(f.failed.count("a"), 1u);
  EXPECT_EQ(s->Score(big, {"a", "b"})[0], 0);
  // Another pod of the same shape (other container name) shares the verdicts, and sees them.
  EXPECT_EQ(s->Filter(Req(1, 60, 40000, "other"), {"a", "b"}).feasible,
            (std::vector<std::string>{"b"}));
  // The bind fails: a fits again.
  s->BindFailed("u1", t->generation);
  EXPECT_EQ(s->Filter(big, {"a", "b"}).feasible, (std::vector<std::string>{"a", "b"}));
  // A node update (GPU unhealthy) is seen at once.
  NodeInventory sick = Gpus(1, "b");
  sick.gpus[0].healthy = false;
  s->UpsertNode("b", sick);
  f = s->Filter(big, {"a", "b"});
  EXPECT_EQ(f.feasible, (std::vector<std::string>{"a"}));
  EXPECT_EQ(f.unresolvable.count("b"), 1u);
  // A watch event placing a pod, then its deletion.
  auto t2 = s->Assume("u2", "ns", "p2", big, "a");
  ASSERT_TRUE(t2.has_value());
  s->BindSucceeded("u2", t2->generation);
  EXPECT_TRUE(s->Filter(big, {"a"}).feasible.empty());
  s->RemovePod("u2");
  EXPECT_EQ(s->Filter(big, {"a"}).feasible, (std::vector<std::string>{"a"}));
  PodInfo watched{"u3", "ns", "p3", "a", false, t2->assignment, std::nullopt, {}, "", {}};
  s->UpsertPod(watched);
  EXPECT_TRUE(s->Filter(big, {"a"}).feasible.empty());
  // The node goes away.
  s->RemoveNode("a");
  EXPECT_EQ(s->Filter(big, {"a"}).unresolvable.count("a"), 1u);
}

TEST(PlacementVerdicts, UnchangedInventoriesKeepTheVersion) {
  auto s = Make(32);
  s->UpsertNode("a", Gpus(2, "a"));
  s->Filter(Req(1, 10, 1000), {"a"});
  const uint64_t v = s->version();
  s->UpsertNode("a", Gpus(2, "a"));  // a resync with nothing new
  s->UpsertPod(
      PodInfo{"x", "ns", "x", "", false, std::nullopt, std::nullopt, {}, "", {}});  // no decision
  EXPECT_EQ(s->version(), v);
}

// Random changes and random node lists: a state that remembers answers exactly like one that
// does not.
TEST(PlacementVerdicts, SameAnswersAsWithoutMemory) {
  auto memo = Make(4);  // few slots: replacement is exercised too
  auto plain = Make(0);
  std::vector<std::string> names;
  for (int n = 0; n < 12; ++n) {
    names.push_back("n" + std::to_string(n));
    const bool big = n % 3 != 0;
    for (auto* s : {memo.get(), plain.get()}) {
      s->UpsertNode(names.back(),
                    big ? Gpus(2, names.back()) : Gpus(2, names.back(), 23034, "NVIDIA L4"));
    }
  }
  const std::vector<PodGpuRequest> shapes = {Req(1, 30, 8000),  Req(1, 100, std::nullopt),
                                             Req(2, 50, 20000), Req(1, 20, 30000),
                                             Req(1, 10, 2000),  Req(2, 100, std::nullopt)};
  Rng rng(11);
  std::vector<std::pair<std::string, uint64_t>> live;  // uid, generation
  for (int step = 0; step < 400; ++step) {
    const uint64_t op = rng.UniformInt(10);
    if (op < 5) {
      const std::string uid = "u" + std::to_string(step);
      const PodGpuRequest& r = shapes[rng.UniformInt(shapes.size())];
      const std::string& node = names[rng.UniformInt(names.size())];
      auto a = memo->Assume(uid, "ns", uid, r, node);
      auto b = plain->Assume(uid, "ns", uid, r, node);
      ASSERT_EQ(a.has_value(), b.has_value()) << "step " << step;
      if (a) {
        ASSERT_EQ(a->assignment, b->assignment) << "step " << step;
        memo->BindSucceeded(uid, a->generation);
        plain->BindSucceeded(uid, b->generation);
        live.emplace_back(uid, a->generation);
      }
    } else if (op < 7 && !live.empty()) {
      const size_t k = rng.UniformInt(live.size());
      memo->RemovePod(live[k].first);
      plain->RemovePod(live[k].first);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (op < 8) {
      const std::string& node = names[rng.UniformInt(names.size())];
      NodeInventory inv = Gpus(2, node);
      inv.gpus[rng.UniformInt(2)].healthy = rng.UniformInt(2) == 0;
      memo->UpsertNode(node, inv);
      plain->UpsertNode(node, inv);
    }
    // Ask about every shape, twice (the second from memory), over a random subset of nodes.
    for (int q = 0; q < 3; ++q) {
      const PodGpuRequest& r = shapes[rng.UniformInt(shapes.size())];
      std::vector<std::string> ask;
      for (const std::string& n : names) {
        if (rng.UniformInt(3) != 0) ask.push_back(n);
      }
      ask.push_back("unknown-node");
      for (int repeat = 0; repeat < 2; ++repeat) {
        FilterResult a = memo->Filter(r, ask), b = plain->Filter(r, ask);
        ASSERT_EQ(a.feasible, b.feasible) << "step " << step;
        ASSERT_EQ(a.failed, b.failed) << "step " << step;
        ASSERT_EQ(a.unresolvable, b.unresolvable) << "step " << step;
        ASSERT_EQ(memo->Score(r, a.feasible), plain->Score(r, b.feasible)) << "step " << step;
      }
    }
  }
  EXPECT_TRUE(memo->CheckConsistency().ok());
}

}  // namespace
}  // namespace vgpu::k8s
