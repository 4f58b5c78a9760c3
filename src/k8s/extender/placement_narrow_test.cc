// The narrow filter mode, holds and retries; CPU and memory counted like kube-scheduler counts
// them; pods without GPUs placed too.
#include <gtest/gtest.h>

#include "k8s/extender/placement_state.h"

namespace vgpu::k8s {
namespace {

using namespace std::chrono_literals;

NodeInventory Gpus(int n, const std::string& prefix, int64_t mem = 81920) {
  NodeInventory inv;
  for (int i = 0; i < n; ++i) {
    inv.gpus.push_back(
        {prefix + "-GPU-" + std::to_string(i), i, "NVIDIA A100-SXM4-80GB", mem, 10, true, 0, {}});
  }
  return inv;
}

PodGpuRequest Req(int cores, HostResources host = {}) {
  PodGpuRequest r;
  ContainerGpuRequest c;
  c.name = "main";
  c.count = 1;
  c.cores = cores;
  c.memory_mib = 1000;
  r.containers.push_back(c);
  r.host = host;
  return r;
}

PodGpuRequest CpuOnly(int64_t cpu, int64_t mem) {
  PodGpuRequest r;
  r.host = {cpu, mem};
  return r;
}

struct Narrow : ::testing::Test {
  SystemClock::time_point now = SystemClock::time_point(std::chrono::hours(500000));
  std::unique_ptr<PlacementState> Make(std::string policy = "bestfit", int tolerance = 0) {
    StateOptions o;
    o.policy = std::move(policy);
    o.filter_mode = FilterMode::kNarrow;
    o.narrow_tolerance = tolerance;
    o.clock = [this] { return now; };
    auto s = PlacementState::Create(std::move(o));
    EXPECT_TRUE(s.has_value());
    return std::move(*s);
  }
  const HostResources alloc{32000, 131072};
  const std::vector<std::string> names = {"a", "b", "c"};
  void AddNodes(PlacementState& s) {
    for (const std::string& n : names) s.UpsertNode(n, Gpus(2, n), alloc);
  }
};

TEST_F(Narrow, TheChoiceAloneIsAnsweredAndHeldUntilItsBind) {
  auto s = Make();
  AddNodes(*s);
  // b already carries a pod: best fit prefers it.
  ASSERT_TRUE(s->Assume("u0", "ns", "p0", Req(50), "b").has_value());
  FilterResult f = s->Filter(Req(30), names, PodRef{"u1", "ns", "p1"});
  EXPECT_EQ(f.feasible, std::vector<std::string>{"b"});
  EXPECT_EQ(f.narrowed, 2u);
  EXPECT_NE(f.unresolvable["a"].find("another node fits the pod better"), std::string::npos);
  EXPECT_EQ(s->counts().pods_held, 1u);
  // Prioritize, if kube-scheduler asks, answers the hold.
  EXPECT_EQ(s->Score(Req(30), names, PodRef{"u1", "ns", "p1"}), (std::vector<int64_t>{0, 10, 0}));
  auto t = s->Assume("u1", "ns", "p1", Req(30), "b");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ(s->counts().pods_held, 0u);
  s->BindSucceeded("u1", t->generation);
  EXPECT_EQ(s->counts().pods_bound, 1u);
  EXPECT_TRUE(s->CheckConsistency().ok()) << s->CheckConsistency().ToString();
  const auto usage = s->Usage();
  int32_t on_b = 0;
  for (const auto& u : usage) on_b += u.node == "b" ? u.milli_used : 0;
  EXPECT_EQ(on_b, 800);  // held and bound once, not twice
  // A pod filtered while another one's hold stands sees that share taken.
  ASSERT_EQ(s->Filter(Req(70), {"b"}, PodRef{"u2", "ns", "p2"}).feasible.size(), 1u);
  EXPECT_TRUE(s->Filter(Req(70), {"b"}, PodRef{"u3", "ns", "p3"}).feasible.empty());
}

TEST_F(Narrow, ARetryAfterARejectionGetsTheNextBestNode) {
  auto s = Make();
  AddNodes(*s);
  ASSERT_TRUE(s->Assume("u0", "ns", "p0", Req(50), "b").has_value());
  EXPECT_EQ(s->Filter(Req(30), names, PodRef{"u1", "ns", "p1"}).feasible,
            std::vector<std::string>{"b"});
  // kube-scheduler rejected b (another plugin or extender) and asks again: not b, and b's hold
  // is gone.
  FilterResult again = s->Filter(Req(30), names, PodRef{"u1", "ns", "p1"});
  ASSERT_EQ(again.feasible.size(), 1u);
  EXPECT_NE(again.feasible[0], "b");
  const std::string second = again.feasible[0];
  // Once every feasible node was tried, it starts over.
  FilterResult third = s->Filter(Req(30), names, PodRef{"u1", "ns", "p1"});
  ASSERT_EQ(third.feasible.size(), 1u);
  EXPECT_NE(third.feasible[0], second);
  FilterResult fourth = s->Filter(Req(30), names, PodRef{"u1", "ns", "p1"});
  EXPECT_EQ(fourth.feasible, std::vector<std::string>{"b"});
  // A pod kube-scheduler cannot bind anywhere else keeps its only node.
  FilterResult only = s->Filter(Req(30), {"c"}, PodRef{"u2", "ns", "p2"});
  EXPECT_EQ(only.feasible, std::vector<std::string>{"c"});
  EXPECT_EQ(s->Filter(Req(30), {"c"}, PodRef{"u2", "ns", "p2"}).feasible,
            std::vector<std::string>{"c"});
  EXPECT_TRUE(s->CheckConsistency().ok());
}

TEST_F(Narrow, AnExpiredHoldIsReleasedAndItsNodeLeftOut) {
  auto s = Make();
  AddNodes(*s);
  ASSERT_TRUE(s->Assume("u0", "ns", "p0", Req(50), "b").has_value());
  ASSERT_EQ(s->Filter(Req(30), names, PodRef{"u1", "ns", "p1"}).feasible,
            std::vector<std::string>{"b"});
  EXPECT_TRUE(s->ExpiredAssumptions().empty());  // u0 is in flight, u1's hold is young
  EXPECT_EQ(s->counts().pods_held, 1u);
  now += 121s;
  // Nothing of a hold is on the API server: it is released without asking, and not listed.
  EXPECT_TRUE(s->ExpiredAssumptions().empty());
  EXPECT_EQ(s->counts().pods_held, 0u);
  EXPECT_EQ(s->counts().expired, 1u);
  EXPECT_NE(s->Filter(Req(30), names, PodRef{"u1", "ns", "p1"}).feasible,
            std::vector<std::string>{"b"});
}

PodGpuRequest Slice() {  // 10% and 3000 MiB: ten to an H100
  PodGpuRequest r = Req(10);
  r.containers[0].memory_mib = 3000;
  return r;
}

TEST_F(Narrow, HoldsOfPodsThatAreNotBoundNeverRefuseABind) {
  // One node with two H100s: room for 20 pods of 10%.
  auto s = Make("default");
  NodeInventory inv;
  for (int i = 0; i < 2; ++i) {
    inv.gpus.push_back(
        {"GPU-h-" + std::to_string(i), i, "NVIDIA H100 80GB HBM3", 81559, 10, true, 0, {}});
  }
  s->UpsertNode("h", inv, alloc);
  const auto filter = [&](const std::string& uid) {
    return s->Filter(Slice(), {"h"}, PodRef{uid, "ns", uid}).feasible.size();
  };
  const auto bind = [&](const std::string& uid) {
    auto t = s->Assume(uid, "ns", uid, Slice(), "h");
    if (t) s->BindSucceeded(uid, t->generation);
    return t.has_value();
  };
  for (int i = 0; i < 18; ++i) {
    const std::string uid = "bound-" + std::to_string(i);
    ASSERT_EQ(filter(uid), 1u);
    ASSERT_TRUE(bind(uid));
  }
  // a's filter holds a share, but its bind is slow (a volume, a Permit plugin): the hold
  // expires. b and c are filtered meanwhile and hold the last two shares; something after the
  // filter rejects b, which will not be bound.
  ASSERT_EQ(filter("a"), 1u);
  now += 121s;
  EXPECT_TRUE(s->ExpiredAssumptions().empty());
  ASSERT_EQ(filter("b"), 1u);
  ASSERT_EQ(filter("c"), 1u);
  EXPECT_EQ(filter("d"), 0u);  // the holds count for the filters
  EXPECT_EQ(s->counts().pods_held, 2u);
  // a's bind comes while the GPUs have room for two more: b's hold gives way.
  EXPECT_TRUE(bind("a"));
  EXPECT_TRUE(bind("c"));  // its own hold
  EXPECT_EQ(s->counts().pods_bound, 20u);
  EXPECT_EQ(s->counts().pods_held, 0u);
  EXPECT_FALSE(bind("b"));  // now the GPUs are full
  EXPECT_TRUE(s->CheckConsistency().ok()) << s->CheckConsistency().ToString();
}

TEST_F(Narrow, AHoldOfAPodBoundElsewhereIsReleased) {
  auto s = Make();
  AddNodes(*s);
  ASSERT_TRUE(s->Assume("u0", "ns", "p0", Req(50), "b").has_value());
  ASSERT_EQ(s->Filter(Req(30, {4000, 1000}), names, PodRef{"u1", "ns", "p1"}).feasible,
            std::vector<std::string>{"b"});
  // Another binder puts the pod on c, without a decision of ours.
  s->UpsertPod(
      PodInfo{"u1", "ns", "p1", "c", false, std::nullopt, std::nullopt, {4000, 1000}, "", {}});
  EXPECT_EQ(s->counts().pods_held, 0u);
  int32_t on_b = 0;
  for (const auto& u : s->Usage()) on_b += u.node == "b" ? u.milli_used : 0;
  EXPECT_EQ(on_b, 500);  // u0 only
  // Its CPU counts on c: 28 of 32 cores are left there.
  EXPECT_TRUE(s->Filter(CpuOnly(29000, 0), {"c"}, PodRef{"x", "ns", "x"}).feasible.empty());
  EXPECT_FALSE(s->Filter(CpuOnly(28000, 0), {"c"}, PodRef{"y", "ns", "y"}).feasible.empty());
  EXPECT_TRUE(s->CheckConsistency().ok()) << s->CheckConsistency().ToString();
}

TEST_F(Narrow, ToleranceKeepsTheNearBestNodes) {
  auto all = Make("bestfit", 10);
  AddNodes(*all);
  ASSERT_TRUE(all->Assume("u0", "ns", "p0", Req(50), "b").has_value());
  FilterResult f = all->Filter(Req(30), names, PodRef{"u1", "ns", "p1"});
  EXPECT_EQ(f.feasible.size(), 3u);
  EXPECT_EQ(all->counts().pods_held, 0u);  // more than one node: kube-scheduler chooses
  const std::vector<int64_t> sc = all->Score(Req(30), names, PodRef{"u1", "ns", "p1"});
  EXPECT_EQ(sc[1], 10);
  EXPECT_EQ(sc[0], 0);  // a and c are equal and the worst of the list
  EXPECT_EQ(sc[2], 0);
  // Tolerance 1 keeps the choice and what scores 9: nothing here.
  auto one = Make("bestfit", 1);
  AddNodes(*one);
  ASSERT_TRUE(one->Assume("u0", "ns", "p0", Req(50), "b").has_value());
  EXPECT_EQ(one->Filter(Req(30), names, PodRef{"u1", "ns", "p1"}).feasible,
            std::vector<std::string>{"b"});
  // ... but both of two equal nodes (9 is the tie's loser).
  EXPECT_EQ(one->Filter(Req(30), {"a", "c"}, PodRef{"u2", "ns", "p2"}).feasible.size(), 2u);
}

TEST_F(Narrow, CpuAndMemoryCountLikeKubeSchedulerCountsThem) {
  auto s = Make();
  AddNodes(*s);
  // A pod of another scheduler on a, and a CPU-only pod held on its node.
  PodInfo web{"w1", "ns", "web", "a", false, std::nullopt, std::nullopt, {30000, 1000}, "", {}};
  s->UpsertPod(web);
  FilterResult big = s->Filter(Req(10, {4000, 1000}), {"a"}, PodRef{"g1", "ns", "g1"});
  EXPECT_TRUE(big.feasible.empty());
  EXPECT_NE(big.failed["a"].find("insufficient free CPU or memory"), std::string::npos);
  FilterResult never = s->Filter(Req(10, {64000, 1000}), {"a"}, PodRef{"g2", "ns", "g2"});
  EXPECT_NE(never.unresolvable["a"].find("allocatable CPU or memory is below"), std::string::npos);
  // CPU-only pods: judged on CPU and memory here, passed on nodes vgpu does not know.
  FilterResult cpu =
      s->Filter(CpuOnly(3000, 1000), {"a", "b", "cpu-node"}, PodRef{"c1", "ns", "c1"});
  EXPECT_EQ(cpu.feasible.size(), 2u);  // one engine node (the choice) and cpu-node
  EXPECT_EQ(cpu.feasible.back(), "cpu-node");
  const std::vector<int64_t> sc =
      s->Score(CpuOnly(3000, 1000), {"a", "b", "cpu-node"}, PodRef{"c2", "ns", "c2"});
  EXPECT_EQ(sc[2], 10);
  // Its bind counts its CPU at once; the pod leaving releases it.
  auto t = s->Assume("c1", "ns", "c1", CpuOnly(3000, 1000), "a");
  ASSERT_TRUE(t.has_value());
  s->BindSucceeded("c1", t->generation);
  EXPECT_TRUE(s->Filter(CpuOnly(1000, 1000), {"a"}, PodRef{"c3", "ns", "c3"}).feasible.empty());
  s->RemovePod("w1");
  EXPECT_EQ(s->Filter(CpuOnly(1000, 1000), {"a"}, PodRef{"c4", "ns", "c4"}).feasible,
            std::vector<std::string>{"a"});
  // A pod that requests nothing passes everywhere, unjudged.
  EXPECT_EQ(s->Filter(PodGpuRequest{}, names, PodRef{"e", "ns", "e"}).feasible.size(), 3u);
  EXPECT_TRUE(s->CheckConsistency().ok()) << s->CheckConsistency().ToString();
}

TEST_F(Narrow, GpuPodsPlacedByOthersStillCountWhenTheCpuIsOvercommitted) {
  auto s = Make();
  AddNodes(*s);
  // kubelet runs more than the allocatable (a static pod, a shrunk node).
  s->UpsertPod(
      PodInfo{"w1", "ns", "w1", "a", false, std::nullopt, std::nullopt, {40000, 0}, "", {}});
  auto t = s->Assume("g1", "ns", "g1", Req(60, {2000, 0}), "a");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();  // kube-scheduler's view decided the fit
  EXPECT_TRUE(s->CheckConsistency().ok()) << s->CheckConsistency().ToString();
  s->RemovePod("w1");
  EXPECT_TRUE(s->CheckConsistency().ok());
  EXPECT_EQ(s->Filter(CpuOnly(30000, 0), {"a"}, PodRef{"c", "ns", "c"}).feasible,
            std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace vgpu::k8s
