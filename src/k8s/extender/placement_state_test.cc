#include "k8s/extender/placement_state.h"

#include <gtest/gtest.h>

#include <thread>

namespace vgpu::k8s {
namespace {

using namespace std::chrono_literals;

NodeInventory Gpus(int n, const std::string& model = "NVIDIA A100-SXM4-80GB", int64_t mem = 81920,
                   int units = 10, const std::string& prefix = "") {
  NodeInventory inv;
  for (int i = 0; i < n; ++i) {
    inv.gpus.push_back({prefix + "GPU-" + std::to_string(i), i, model, mem, units, true, 0, {}});
  }
  return inv;
}

PodGpuRequest Req(int count, std::optional<int> cores, std::optional<int64_t> mem) {
  PodGpuRequest r;
  ContainerGpuRequest c;
  c.name = "main";
  c.count = count;
  c.cores = cores;
  c.memory_mib = mem;
  r.containers.push_back(c);
  return r;
}

struct Fixture : ::testing::Test {
  SystemClock::time_point now = SystemClock::time_point(std::chrono::hours(500000));
  std::unique_ptr<PlacementState> Make(StateOptions o = {}) {
    o.clock = [this] { return now; };
    auto s = PlacementState::Create(std::move(o));
    EXPECT_TRUE(s.has_value()) << s.error().ToString();
    return std::move(*s);
  }
};

TEST_F(Fixture, FilterReturnsEveryFeasibleNodeWithReasonsForTheRest) {
  auto s = Make();
  for (const char* n : {"a", "b", "c"}) s->UpsertNode(n, Gpus(2, "A100", 81920, 10, n));
  s->UpsertNode("small", Gpus(1, "T4", 15360, 10, "small"));
  NodeInventory hami = Gpus(2, "A100", 81920, 10, "h");
  hami.source = InventorySource::kHami;
  s->UpsertNode("hami", hami);
  FilterResult f = s->Filter(Req(2, 50, 20000), {"a", "b", "c", "small", "hami", "cpu-only"});
  EXPECT_EQ(f.feasible, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(f.failed.empty());
  ASSERT_EQ(f.unresolvable.size(), 3u);
  EXPECT_NE(f.unresolvable["cpu-only"].find("no GPU inventory"), std::string::npos);
  EXPECT_NE(f.unresolvable["hami"].find("HAMi"), std::string::npos);
  EXPECT_NE(f.unresolvable["small"].find("fewer than 2"), std::string::npos);
  // A pod without GPU requests passes everywhere.
  EXPECT_EQ(s->Filter(PodGpuRequest{}, {"x", "y"}).feasible.size(), 2u);
}

TEST_F(Fixture, AssumeReservesAndFullNodesFail) {
  auto s = Make();
  s->UpsertNode("a", Gpus(1));
  auto t1 = s->Assume("u1", "ns", "p1", Req(1, 60, 40000), "a");
  ASSERT_TRUE(t1.has_value()) << t1.error().ToString();
  EXPECT_EQ(t1->assignment.node, "a");
  ASSERT_EQ(t1->assignment.containers.size(), 1u);
  EXPECT_EQ(t1->assignment.containers[0].gpus[0].uuid, "GPU-0");
  EXPECT_EQ(t1->assignment.containers[0].gpus[0].milli, 600);
  EXPECT_EQ(t1->assignment.containers[0].gpus[0].cores, 60);
  FilterResult f = s->Filter(Req(1, 50, 1000), {"a"});
  EXPECT_TRUE(f.feasible.empty());
  EXPECT_NE(f.failed["a"].find("insufficient free GPU"), std::string::npos);
  auto t2 = s->Assume("u2", "ns", "p2", Req(1, 50, 1000), "a");
  ASSERT_FALSE(t2.has_value());
  EXPECT_EQ(t2.error().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(s->Assume("u3", "ns", "p3", Req(1, 40, 40000), "a").has_value());
  // Exclusive (nothing stated) needs an unused GPU.
  s->UpsertNode("b", Gpus(1, "A100", 81920, 10, "b"));
  ASSERT_TRUE(s->Assume("u4", "ns", "p4", Req(1, 10, 100), "b").has_value());
  EXPECT_FALSE(s->Assume("u5", "ns", "p5", Req(1, std::nullopt, std::nullopt), "b").has_value());
  EXPECT_TRUE(s->CheckConsistency().ok());
}

TEST_F(Fixture, BindOutcomesAndGenerations) {
  auto s = Make();
  s->UpsertNode("a", Gpus(1));
  auto t = s->Assume("u1", "ns", "p", Req(1, 100, std::nullopt), "a");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(s->Assume("u1", "ns", "p", Req(1, 100, std::nullopt), "a").error().code(),
            StatusCode::kAlreadyExists);     // in flight
  s->BindFailed("u1", t->generation + 100);  // stale: ignored
  EXPECT_EQ(s->counts().pods_assumed, 1u);
  s->BindFailed("u1", t->generation);
  EXPECT_EQ(s->counts().pods_assumed, 0u);
  auto t2 = s->Assume("u1", "ns", "p", Req(1, 100, std::nullopt), "a");
  ASSERT_TRUE(t2.has_value());
  s->BindSucceeded("u1", t2->generation);
  EXPECT_EQ(s->counts().pods_bound, 1u);
}

TEST_F(Fixture, ABoundOrUnsettledPodIsNotMovedSilently) {
  auto s = Make();
  s->UpsertNode("a", Gpus(1, "A100", 81920, 10, "a"));
  s->UpsertNode("b", Gpus(1, "A100", 81920, 10, "b"));
  auto t = s->Assume("u1", "ns", "p", Req(1, 100, std::nullopt), "a");
  ASSERT_TRUE(t.has_value());
  s->BindUnknown("u1", t->generation);
  auto old = s->UnsettledElsewhere("u1", "b");
  ASSERT_TRUE(old.has_value());
  EXPECT_FALSE(s->UnsettledElsewhere("u1", "a").has_value());
  auto moved = s->Assume("u1", "ns", "p", Req(1, 100, std::nullopt), "b");
  ASSERT_FALSE(moved.has_value());
  EXPECT_EQ(moved.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(moved.error().message().find("unsettled decision for a"), std::string::npos);
  s->ConfirmBound("u1", old->generation);
  EXPECT_NE(s->Assume("u1", "ns", "p", Req(1, 100, std::nullopt), "b")
                .error()
                .message()
                .find("already bound to a"),
            std::string::npos);
}

TEST_F(Fixture, UuidHealthAndUnitConstraints) {
  auto s = Make();
  NodeInventory inv = Gpus(4, "A100", 81920, 2);
  inv.gpus[0].healthy = false;
  s->UpsertNode("a", inv);
  PodGpuRequest only3 = Req(1, 10, 100);
  only3.use_uuids = {"GPU-3"};
  auto t = s->Assume("u1", "ns", "p1", only3, "a");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->assignment.containers[0].gpus[0].uuid, "GPU-3");
  PodGpuRequest not12 = Req(1, 10, 100);
  not12.nouse_uuids = {"GPU-1", "GPU-2"};
  auto t2 = s->Assume("u2", "ns", "p2", not12, "a");
  ASSERT_TRUE(t2.has_value());
  EXPECT_EQ(t2->assignment.containers[0].gpus[0].uuid, "GPU-3");  // GPU-0 is unhealthy
  // GPU-3 holds 2 pods = its units: a third one cannot go there.
  EXPECT_FALSE(s->Assume("u3", "ns", "p3", only3, "a").has_value());
  EXPECT_NE(s->Filter(only3, {"a"}).failed["a"].find("insufficient"), std::string::npos);
  // Three GPUs healthy with room, but a 4-GPU pod never fits: unresolvable.
  EXPECT_EQ(s->Filter(Req(4, 10, 100), {"a"}).unresolvable.count("a"), 1u);
  // Health recovers: the engine is rebuilt and the reservations survive.
  inv.gpus[0].healthy = true;
  s->UpsertNode("a", inv);
  auto t4 = s->Assume("u4", "ns", "p4", Req(4, 10, 100), "a");
  EXPECT_FALSE(t4.has_value());  // GPU-3 is at its units
  auto t5 = s->Assume("u5", "ns", "p5", Req(3, 10, 100), "a");
  ASSERT_TRUE(t5.has_value()) << t5.error().ToString();
  EXPECT_EQ(s->counts().rebuilds, 2u);
  EXPECT_TRUE(s->CheckConsistency().ok());
}

TEST_F(Fixture, ModelAndMemoryReasons) {
  auto s = Make();
  s->UpsertNode("a", Gpus(2, "NVIDIA A100-SXM4-80GB"));
  PodGpuRequest h100 = Req(1, 10, 100);
  h100.use_types = {"H100"};
  FilterResult f = s->Filter(h100, {"a"});
  EXPECT_NE(f.unresolvable["a"].find("use-gputype"), std::string::npos);
  FilterResult big = s->Filter(Req(1, 10, 999999), {"a"});
  EXPECT_NE(big.unresolvable["a"].find("asks 999999 MiB per GPU"), std::string::npos)
      << big.unresolvable["a"];
  EXPECT_NE(big.unresolvable["a"].find("81920 MiB"), std::string::npos);
  PodGpuRequest not_a100 = Req(1, 10, 100);
  not_a100.nouse_types = {"a100"};
  EXPECT_EQ(s->Filter(not_a100, {"a"}).unresolvable.size(), 1u);
}

TEST_F(Fixture, PercentagesWorkAcrossMemoryClasses) {
  auto s = Make();
  s->UpsertNode("big", Gpus(1, "A100", 81920, 10, "big"));
  s->UpsertNode("small", Gpus(1, "T4", 15360, 10, "small"));
  PodGpuRequest half;
  ContainerGpuRequest c;
  c.name = "m";
  c.count = 1;
  c.memory_percent = 50;
  c.cores = 20;
  half.containers.push_back(c);
  EXPECT_EQ(s->Filter(half, {"big", "small"}).feasible.size(), 2u);
  auto t = s->Assume("u", "ns", "p", half, "small");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->assignment.containers[0].gpus[0].memory_mib, 7680);
  auto t2 = s->Assume("u2", "ns", "p2", half, "big");
  ASSERT_TRUE(t2.has_value());
  EXPECT_EQ(t2->assignment.containers[0].gpus[0].memory_mib, 40960);
}

TEST_F(Fixture, ScoresAreZeroToTen) {
  StateOptions o;
  o.policy = "bestfit";
  auto s = Make(o);
  for (const char* n : {"a", "b", "c"}) s->UpsertNode(n, Gpus(2, "A100", 81920, 10, n));
  ASSERT_TRUE(s->Assume("u1", "ns", "p1", Req(1, 50, 1000), "b").has_value());
  std::vector<int64_t> sc = s->Score(Req(1, 30, 1000), {"a", "b", "c", "unknown"});
  ASSERT_EQ(sc.size(), 4u);
  for (int64_t v : sc) {
    EXPECT_GE(v, 0);
    EXPECT_LE(v, 10);
  }
  EXPECT_EQ(sc[3], 0);
  EXPECT_GT(sc[1], sc[0]);  // best fit prefers the node already in use
  EXPECT_EQ(sc[0], sc[2]);
}

TEST_F(Fixture, RestartRebuildsFromAnnotationsWithoutDoubleBooking) {
  auto first = Make();
  first->UpsertNode("a", Gpus(2));
  auto bound = first->Assume("u1", "ns", "p1", Req(1, 70, 50000), "a");
  auto assumed = first->Assume("u2", "ns", "p2", Req(1, 70, 50000), "a");
  ASSERT_TRUE(bound.has_value() && assumed.has_value());
  EXPECT_NE(bound->assignment.containers[0].gpus[0].uuid,
            assumed->assignment.containers[0].gpus[0].uuid);

  // A new process learns the same pods from the API server.
  auto second = Make();
  second->UpsertNode("a", Gpus(2));
  PodInfo p1{"u1", "ns", "p1", "a", false, bound->assignment, now, {}, "", {}};
  PodInfo p2{"u2", "ns", "p2", "", false, assumed->assignment, now, {}, "", {}};
  second->ReplacePods({p1, p2});
  PlacementState::Counts c = second->counts();
  EXPECT_EQ(c.pods_bound, 1u);
  EXPECT_EQ(c.pods_assumed, 1u);
  EXPECT_FALSE(second->Assume("u3", "ns", "p3", Req(1, 40, 1000), "a").has_value());
  EXPECT_TRUE(second->Assume("u4", "ns", "p4", Req(1, 30, 1000), "a").has_value());
  EXPECT_TRUE(second->CheckConsistency().ok());

  // The unbound one expires after the TTL; the bound one never does.
  EXPECT_TRUE(second->ExpiredAssumptions().empty());
  now += 121s;
  auto expired = second->ExpiredAssumptions();
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].uid, "u2");
  auto released = second->ExpireIfUnbound("u2", expired[0].generation);
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(*released, assumed->assignment);
  EXPECT_EQ(second->counts().expired, 1u);
  EXPECT_FALSE(second->ExpireIfUnbound("u2", expired[0].generation).has_value());
  // A late watch event with the same stale decision is not tracked again.
  EXPECT_EQ(second->counts().pods_assumed, 1u);  // u4, in flight
  second->UpsertPod(p2);
  EXPECT_EQ(second->counts().pods_assumed, 1u);
  EXPECT_TRUE(second->Assume("u5", "ns", "p5", Req(1, 70, 50000), "a").has_value());
  EXPECT_TRUE(second->CheckConsistency().ok());
}

TEST_F(Fixture, WatchEventsTrackLifecycle) {
  auto s = Make();
  s->UpsertNode("a", Gpus(1));
  auto t = s->Assume("u1", "ns", "p1", Req(1, 100, std::nullopt), "a");
  ASSERT_TRUE(t.has_value());
  // A stale event without annotations does not drop the in-flight reservation.
  s->UpsertPod(PodInfo{"u1", "ns", "p1", "", false, std::nullopt, std::nullopt, {}, "", {}});
  EXPECT_EQ(s->counts().pods_assumed, 1u);
  s->BindSucceeded("u1", t->generation);
  s->UpsertPod(PodInfo{"u1", "ns", "p1", "a", false, t->assignment, now, {}, "", {}});
  EXPECT_EQ(s->counts().pods_bound, 1u);
  s->UpsertPod(PodInfo{"u1", "ns", "p1", "a", true, t->assignment, now, {}, "", {}});  // Succeeded
  EXPECT_EQ(s->counts().pods_bound, 0u);
  EXPECT_TRUE(s->Assume("u2", "ns", "p2", Req(1, 100, std::nullopt), "a").has_value());
  // Pods on a node that is not known yet are counted once it appears.
  PodAssignment elsewhere = t->assignment;
  elsewhere.node = "later";
  s->UpsertPod(PodInfo{"u9", "ns", "p9", "later", false, elsewhere, now, {}, "", {}});
  EXPECT_EQ(s->counts().pods_unplaced, 1u);
  s->UpsertNode("later", Gpus(1));
  EXPECT_EQ(s->counts().pods_unplaced, 0u);
  EXPECT_FALSE(s->Assume("u10", "ns", "p10", Req(1, 10, 10), "later").has_value());
}

TEST_F(Fixture, HamiAllocationsAreCounted) {
  auto s = Make();
  s->UpsertNode("a", Gpus(2));
  auto hami =
      ParseHamiAllocation("GPU-0,NVIDIA,40000,60:;GPU-0,NVIDIA,30000,30:GPU-1,NVIDIA,1000,0:", "a");
  ASSERT_TRUE(hami.has_value());
  s->UpsertPod(PodInfo{"h1", "ns", "h", "a", false, *hami, std::nullopt, {}, "", {}});
  auto usage = s->Usage();
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0].milli_used, 900);
  EXPECT_EQ(usage[0].memory_used_mib, 70000);
  EXPECT_EQ(usage[1].milli_used, 1);
  auto t = s->Assume("u", "ns", "p", Req(1, 20, 20000), "a");  // only GPU-1 has room
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ(t->assignment.containers[0].gpus[0].uuid, "GPU-1");
  EXPECT_TRUE(s->CheckConsistency().ok());
}

TEST_F(Fixture, BadPolicyIsRejected) {
  StateOptions o;
  o.policy = "nope";
  EXPECT_EQ(PlacementState::Create(o).error().code(), StatusCode::kNotFound);
  o.policy = "bestfit";
  o.policy_params = {{"zzz", "1"}};
  EXPECT_EQ(PlacementState::Create(o).error().code(), StatusCode::kInvalidArgument);
}

TEST_F(Fixture, ConcurrentAssumesNeverOverCommit) {
  auto s = Make();
  for (int n = 0; n < 4; ++n)
    s->UpsertNode("n" + std::to_string(n), Gpus(2, "A100", 81920, 10, std::to_string(n)));
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const std::string uid = "u" + std::to_string(t) + "-" + std::to_string(i);
        auto r = s->Assume(uid, "ns", uid, Req(1, 10 + (i % 5) * 10, 4000 + i * 100),
                           "n" + std::to_string((t + i) % 4));
        if (r) {
          ++ok;
          if (i % 3 == 0) {
            s->BindFailed(uid, r->generation);
            --ok;
          } else {
            s->BindSucceeded(uid, r->generation);
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(s->CheckConsistency().ok()) << s->CheckConsistency().ToString();
  int64_t milli = 0;
  for (const auto& u : s->Usage()) {
    EXPECT_LE(u.milli_used, 1000);
    EXPECT_LE(u.memory_used_mib, u.memory_mib);
    milli += u.milli_used;
  }
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(s->counts().pods_bound, static_cast<size_t>(ok.load()));
  EXPECT_GT(milli, 7000);  // the cluster filled up
}

TEST_F(Fixture, SoftwareSlicesKeepOffMigGpusAndMpsGpusTakeOnlyConsentingPods) {
  auto s = Make();
  NodeInventory inv = Gpus(3, "NVIDIA H200", 143771, 10, "m");
  inv.gpus[0].mode = GpuMode::kMig;
  inv.gpus[1].mode = GpuMode::kMigDynamic;
  inv.gpus[2].mode = GpuMode::kMps;
  s->UpsertNode("m", inv);
  PodGpuRequest plain = Req(1, 30, 10000);
  // No software slice for a pod that does not allow a shared fault domain: it gets a MIG
  // instance on the mig-dynamic GPU (the static one lists none), never the MPS GPU.
  FilterResult f = s->Filter(plain, {"m"});
  EXPECT_EQ(f.feasible, std::vector<std::string>{"m"});
  auto mig = s->Assume("u1", "ns", "p1", plain, "m");
  ASSERT_TRUE(mig.has_value()) << mig.error().ToString();
  EXPECT_EQ(mig->assignment.containers[0].gpus[0].uuid, "mGPU-1");
  ASSERT_TRUE(mig->assignment.containers[0].gpus[0].mig.has_value());
  EXPECT_EQ(mig->assignment.containers[0].gpus[0].mig->profile, "1g.18gb");
  PodGpuRequest two = Req(2, 30, 10000);  // MIG serves one-GPU pods only
  EXPECT_TRUE(s->Filter(two, {"m"}).feasible.empty());
  EXPECT_FALSE(s->Assume("u0", "ns", "p0", two, "m").has_value());
  PodGpuRequest consenting = plain;
  consenting.allow_shared_fault_domain = true;
  EXPECT_EQ(s->Filter(consenting, {"m"}).feasible, std::vector<std::string>{"m"});
  auto t = s->Assume("u2", "ns", "p2", consenting, "m");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ(t->assignment.containers[0].gpus[0].uuid, "mGPU-2");
  // A whole GPU takes one pod.
  auto w = Make();
  NodeInventory whole = Gpus(1, "NVIDIA H200", 143771, 10, "w");
  whole.gpus[0].mode = GpuMode::kWhole;
  w->UpsertNode("w", whole);
  ASSERT_TRUE(w->Assume("u3", "ns", "p3", Req(1, 10, 1000), "w").has_value());
  EXPECT_FALSE(w->Assume("u4", "ns", "p4", Req(1, 10, 1000), "w").has_value());
}

}  // namespace
}  // namespace vgpu::k8s
