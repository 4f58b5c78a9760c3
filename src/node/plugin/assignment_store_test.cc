#include "node/plugin/assignment_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "node/cluster/test_pods.h"
#include "node/plugin/unit_id.h"

namespace vgpu::node {
namespace {

using testing::GpuShare;

// Each call is a minute later than the previous one: promises have lapsed unless a test says
// otherwise.
int64_t Now() {
  static int64_t now = 0;
  return now += 60'000;
}
using testing::HamiPodWith;
using testing::PodWith;

std::vector<std::string> AllUnits(const std::vector<std::string>& gpus, int units) {
  std::vector<std::string> out;
  for (const auto& g : gpus) {
    for (int u = 0; u < units; ++u) out.push_back(MakeUnitId(g, u));
  }
  return out;
}

TEST(AssignmentStoreTest, PreferPromisesFreeUnitsOfTheOldestPendingContainer) {
  AssignmentStore store;
  store.Update({PodWith("late", "n", {{"GPU-a"}}, 20), PodWith("early", "n", {{"GPU-a"}}, 10)});
  auto available = AllUnits({"GPU-a", "GPU-b"}, 4);
  auto first = store.Prefer(available, {}, 1, Now());
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, std::vector<std::string>{"GPU-a-0"});
  auto e = store.Resolve(*first);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)->pod_name, "early");
  // kubelet no longer offers GPU-a-0; the next pending pod gets the next unit.
  available.erase(available.begin());
  auto second = store.Prefer(available, {}, 1, Now());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*second, std::vector<std::string>{"GPU-a-1"});
  EXPECT_EQ((*store.Resolve(*second))->pod_name, "late");
  // Nothing is pending any more.
  EXPECT_FALSE(store.Prefer(available, {}, 1, Now()).has_value());
}

TEST(AssignmentStoreTest, PromisesDoNotCollide) {
  AssignmentStore store;
  store.Update({PodWith("a", "n", {{"GPU-a"}}, 1), PodWith("b", "n", {{"GPU-a"}}, 2)});
  auto available = AllUnits({"GPU-a"}, 4);
  // Two preferences before either Allocate: the second must not reuse the first's unit.
  auto p1 = store.Prefer(available, {}, 1, Now());
  auto p2 = store.Prefer(available, {}, 1, Now());
  ASSERT_TRUE(p1 && p2);
  // The first Prefer promised "a" its unit; a repeated Prefer keeps a's promise, so p2 is also a's.
  EXPECT_EQ(*p1, *p2);
  EXPECT_EQ((*store.Resolve(*p1))->pod_name, "a");
  auto p3 = store.Prefer(available, {}, 1, Now());
  ASSERT_TRUE(p3.has_value());
  EXPECT_NE(*p3, *p1);
  EXPECT_EQ((*store.Resolve(*p3))->pod_name, "b");
}

TEST(AssignmentStoreTest, LivePromiseSendsTheNextRequestToTheNextPod) {
  AssignmentStore store(/*promise_ttl_ms=*/1000);
  store.Update({PodWith("a", "n", {{"GPU-a"}}, 1), PodWith("b", "n", {{"GPU-a"}}, 2)});
  auto available = AllUnits({"GPU-a"}, 4);
  auto pa = store.Prefer(available, {}, 1, 10'000);
  auto pb = store.Prefer(available, {}, 1, 10'500);  // a's promise is live
  ASSERT_TRUE(pa && pb);
  EXPECT_NE(*pa, *pb);
  EXPECT_EQ((*store.Resolve(*pb))->pod_name, "b");
  EXPECT_EQ((*store.Resolve(*pa))->pod_name, "a");
  // A promise that lapsed is offered again (kubelet never allocated it).
  store.Update({PodWith("c", "n", {{"GPU-a"}}, 3)});
  auto pc1 = store.Prefer(available, {}, 1, 20'000);
  EXPECT_FALSE(store.Prefer(available, {}, 1, 20'100).has_value());
  auto pc2 = store.Prefer(available, {}, 1, 21'500);
  ASSERT_TRUE(pc1 && pc2);
  EXPECT_EQ(*pc1, *pc2);
}

TEST(AssignmentStoreTest, SizeAndGpusMustFit) {
  AssignmentStore store;
  store.Update({PodWith("two", "n", {{"GPU-a"}, {"GPU-b"}}, 1)});
  EXPECT_FALSE(store.Prefer(AllUnits({"GPU-a", "GPU-b"}, 2), {}, 1, Now()).has_value());
  EXPECT_FALSE(store.Prefer(AllUnits({"GPU-a"}, 2), {}, 2, Now()).has_value());
  auto p = store.Prefer(AllUnits({"GPU-a", "GPU-b", "GPU-c"}, 2), {}, 2, Now());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, (std::vector<std::string>{"GPU-a-0", "GPU-b-0"}));
}

TEST(AssignmentStoreTest, ResolveWithoutPreferenceUsesTheGpuSet) {
  AssignmentStore store;
  store.Update({PodWith("x", "n", {{"GPU-a"}}, 5), PodWith("y", "n", {{"GPU-b"}}, 1)});
  auto e = store.Resolve({"GPU-a-3"});
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  EXPECT_EQ((*e)->pod_name, "x");
  EXPECT_EQ((*e)->units, std::vector<std::string>{"GPU-a-3"});
  // A retry of the same Allocate finds the same container.
  EXPECT_EQ((*store.Resolve({"GPU-a-3"}))->pod_name, "x");
  EXPECT_EQ(store.Resolve({"GPU-c-0"}).error().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.Resolve({"GPU-b-0", "GPU-b-1"}).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Resolve({"bogus"}).error().code(), StatusCode::kInvalidArgument);
}

TEST(AssignmentStoreTest, MixedUnitsAreRefused) {
  AssignmentStore store;
  store.Update({PodWith("x", "n", {{"GPU-a"}}, 1), PodWith("y", "n", {{"GPU-b"}}, 2)});
  auto avail = AllUnits({"GPU-a", "GPU-b"}, 2);
  auto px = store.Prefer(avail, {}, 1, Now());
  ASSERT_TRUE(px.has_value());
  auto r = store.Resolve({(*px)[0], "GPU-b-1"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kFailedPrecondition);
}

TEST(AssignmentStoreTest, UpdateKeepsHoldingsAndDropsTerminatedPods) {
  AssignmentStore store;
  PodInfo a = PodWith("a", "n", {{"GPU-a"}}, 1);
  PodInfo b = PodWith("b", "n", {{"GPU-a"}}, 2);
  store.Update({a, b});
  auto pa = store.Prefer(AllUnits({"GPU-a"}, 3), {}, 1, Now());
  ASSERT_TRUE(store.Resolve(*pa).has_value());
  b.phase = "Succeeded";
  auto errors = store.Update({a, b});
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ((*store.Resolve(*pa))->pod_name, "a");  // still holds its unit
  PodInfo broken = PodWith("c", "n", {{"GPU-a"}}, 3);
  broken.annotations[kAssignmentAnnotation] = "{nope";
  errors = store.Update({a, broken});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].first, "default/c");
}

TEST(AssignmentStoreTest, PodsPlacedByHamiAreAssigned) {
  AssignmentStore store;
  // HAMi bound "h" before vgpu bound "v" (bind-time vs assigned-at): h is older.
  PodInfo h = HamiPodWith("h", "n", {{"GPU-a", 3000, 25}, {"GPU-b", 5000, 0}}, 5, "worker");
  h.annotations[kHamiBindTimeAnnotation] = "100";
  PodInfo v = PodWith("v", "n", {{"GPU-a"}, {"GPU-b"}}, 5);
  v.annotations[kAssignedAtAnnotation] = "1970-01-01T00:01:40.500Z";
  EXPECT_TRUE(store.Update({v, h}).empty());
  EXPECT_EQ(store.size(), 2u);
  auto units = store.Prefer(AllUnits({"GPU-a", "GPU-b"}, 3), {}, 2, Now());
  ASSERT_TRUE(units.has_value());
  auto e = store.Resolve(*units);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  EXPECT_EQ((*e)->pod_name, "h");
  EXPECT_EQ((*e)->container.name, "worker");
  EXPECT_EQ((*e)->assigned_at_ms, 100'000);
  ASSERT_EQ((*e)->container.devices.size(), 2u);
  EXPECT_EQ((*e)->container.devices[0].memory_bytes, 3000ULL << 20);
  EXPECT_EQ((*e)->container.devices[0].cores, 25);
  EXPECT_EQ((*e)->container.devices[1].memory_bytes, 5000ULL << 20);
  EXPECT_EQ((*e)->container.devices[1].cores, 100);
}

TEST(AssignmentStoreTest, AGarbledAssignmentIsNamedWhenNothingMatches) {
  AssignmentStore store;
  PodInfo bad = HamiPodWith("bad", "n", {{"GPU-a", 1024, 30}}, 1);
  bad.annotations[kHamiAllocatedAnnotation] = "GPU-a,NVIDIA,1O24,30:;";  // a letter O
  auto errors = store.Update({bad, PodWith("ok", "n", {{"GPU-b"}}, 2)});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].first, "default/bad");
  auto r = store.Resolve({"GPU-a-0"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
  EXPECT_NE(r.error().message().find("no pod on this node is assigned GPU GPU-a"),
            std::string::npos);
  EXPECT_NE(r.error().message().find("unreadable assignments: pod default/bad: annotation "
                                     "hami.io/vgpu-devices-allocated: container 0: non-numeric "
                                     "memory or cores in 'GPU-a,NVIDIA,1O24,30'"),
            std::string::npos)
      << r.error().message();
  // Once the pod is gone, so is the note.
  store.Update({PodWith("ok", "n", {{"GPU-b"}}, 2)});
  EXPECT_EQ(store.Resolve({"GPU-a-0"}).error().message().find("unreadable"), std::string::npos);
}

TEST(AssignmentStoreTest, ComputeAnnotationsReachTheContainers) {
  AssignmentStore store;
  PodInfo a = PodWith("a", "n", {{"GPU-a", 1024, 30}}, 1);
  a.annotations["vgpu.io/compute"] = "guarantee=10,mode=elastic";
  a.annotations["vgpu.io/compute.main"] = "weight=7";
  PodInfo bad = PodWith("b", "n", {{"GPU-a"}}, 2);
  bad.annotations["vgpu.io/compute"] = "guarantee=lots";
  auto errors = store.Update({a, bad});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].first, "default/b");
  EXPECT_NE(errors[0].second.find("vgpu.io/compute: guarantee: \"lots\""), std::string::npos);
  EXPECT_EQ(store.size(), 1u);  // a pod whose settings cannot be read is not allocated
  auto e = store.Resolve({"GPU-a-0"});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ((*e)->container.compute.guarantee, 10);
  EXPECT_EQ((*e)->container.compute.mode, "elastic");
  EXPECT_EQ((*e)->container.compute.weight, 7);
}

TEST(AssignmentStoreTest, RestoredSlicesKeepTheirUnits) {
  AssignmentStore store;
  store.Restore("uid-a", "main", {"GPU-a-4"});
  store.Update({PodWith("a", "n", {{"GPU-a"}}, 1), PodWith("b", "n", {{"GPU-a"}}, 2)});
  // kubelet still offers unit 4 (say, after its own restart): it is a's, so b gets another.
  auto p = store.Prefer(AllUnits({"GPU-a"}, 5), {}, 1, Now());
  ASSERT_TRUE(p.has_value());
  EXPECT_NE((*p)[0], "GPU-a-4");
  EXPECT_EQ((*store.Resolve(*p))->pod_name, "b");
  EXPECT_EQ((*store.Resolve({"GPU-a-4"}))->pod_name, "a");
}

TEST(AssignmentStoreTest, MustIncludeTiesTheAnswerToThatPod) {
  AssignmentStore store;
  PodInfo p = PodWith("p", "n", {{"GPU-a"}}, 5, "init-ctr");
  auto a = ParseAssignment(p.annotations[kAssignmentAnnotation]);
  a->containers[0].init = true;
  ContainerAssignment app;
  app.name = "app";
  app.devices.push_back({"GPU-a", 0, 1ULL << 30, 100});
  a->containers.push_back(app);
  p.annotations[kAssignmentAnnotation] = FormatAssignment(*a);
  store.Update({PodWith("older", "n", {{"GPU-a"}}, 1), p});
  // Allocations without preferences: the older pod first, then p's init container (kubelet
  // allocates init containers first).
  EXPECT_EQ((*store.Resolve({"GPU-a-2"}))->pod_name, "older");
  auto init_units = store.Resolve({"GPU-a-3"});
  ASSERT_TRUE(init_units.has_value());
  EXPECT_EQ((*init_units)->container.name, "init-ctr");
  // kubelet reuses the init container's unit for the app container: must_include = GPU-a-3.
  auto pref = store.Prefer({"GPU-a-0", "GPU-a-1"}, {"GPU-a-3"}, 1, Now());
  ASSERT_TRUE(pref.has_value());
  EXPECT_EQ(*pref, std::vector<std::string>{"GPU-a-3"});
  auto app_entry = store.Resolve({"GPU-a-3"});
  ASSERT_TRUE(app_entry.has_value());
  EXPECT_EQ((*app_entry)->pod_name, "p");
  EXPECT_EQ((*app_entry)->container.name, "app");
}

// 32 pods on 4 GPUs (8 each); kubelet asks for preferences one pod at a time, as it admits
// pods, then the 32 Allocate calls arrive at once. Every container resolves to its own pod.
TEST(AssignmentStoreTest, ConcurrentResolveGivesEachPodItsOwnUnits) {
  AssignmentStore store;
  std::vector<PodInfo> pods;
  const std::vector<std::string> gpus = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
  for (int i = 0; i < 32; ++i) {
    pods.push_back(PodWith("p" + std::to_string(i), "n", {{gpus[i % 4]}}, 100 + i));
  }
  store.Update(pods);
  auto available = AllUnits(gpus, 10);
  std::vector<std::vector<std::string>> chosen;
  // All preferences within the promise TTL (kubelet keeps offering every unit, as none is
  // allocated yet): each goes to the next pod, on a unit nobody else was promised.
  const int64_t now = Now();
  std::set<std::string> distinct;
  for (int i = 0; i < 32; ++i) {
    auto p = store.Prefer(available, {}, 1, now + i);
    ASSERT_TRUE(p.has_value()) << i;
    chosen.push_back(*p);
    distinct.insert((*p)[0]);
  }
  EXPECT_EQ(distinct.size(), 32u);
  std::vector<std::string> resolved(32);
  std::atomic<int> go{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 32; ++i) {
    threads.emplace_back([&, i] {
      go.fetch_add(1);
      while (go.load() < 32) std::this_thread::yield();
      auto e = store.Resolve(chosen[i]);
      resolved[i] = e ? (*e)->pod_name : e.error().ToString();
    });
  }
  for (auto& t : threads) t.join();
  // Preferences follow creation order: the i-th preference is pod p<i>.
  for (int i = 0; i < 32; ++i) EXPECT_EQ(resolved[i], "p" + std::to_string(i));
}

}  // namespace
}  // namespace vgpu::node

namespace vgpu::node {
namespace {

// A pod asking for an instance of a static layout, as the extender records it (with the UUID).
PodInfo MigPod(const std::string& name, const std::string& profile, int start,
               const std::string& mig_uuid, int64_t created) {
  return testing::MigPodWith(name, "n", "GPU-s", profile, start, mig_uuid, 16384, created);
}

const std::vector<AssignmentStore::MigDeviceRef> kLayout = {{"MIG-1", "GPU-s", "1g.18gb", 4},
                                                            {"MIG-2", "GPU-s", "1g.18gb", 5},
                                                            {"MIG-3", "GPU-s", "3g.71gb", 0},
                                                            {"MIG-4", "GPU-s", "1g.18gb+me", 6}};

TEST(AssignmentStoreMigTest, PreferAndResolveGiveEachPodItsAssignedInstance) {
  AssignmentStore store;
  store.Update({MigPod("b", "1g.18gb", 5, "MIG-2", 20), MigPod("a", "3g.71gb", 0, "MIG-3", 10),
                PodWith("soft", "n", {{"GPU-x"}}, 5)});
  // The oldest pod asking for a MIG instance, and only among the instances offered.
  auto first = store.PreferMig(kLayout, 1, Now());
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, std::vector<std::string>{"MIG-3"});
  auto second = store.PreferMig({kLayout[0], kLayout[1]}, 1, Now());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*second, std::vector<std::string>{"MIG-2"});
  auto a = store.ResolveMig({kLayout[2]});
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ((*a)->pod_name, "a");
  auto b = store.ResolveMig({kLayout[1]});
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ((*b)->pod_name, "b");
  // Both are allocated: nothing is pending, and a held instance is not given again.
  EXPECT_FALSE(store.PreferMig(kLayout, 1, Now()).has_value());
  auto again = store.ResolveMig({kLayout[1]});
  ASSERT_TRUE(again.has_value());  // kubelet retrying the same Allocate
  EXPECT_EQ((*again)->pod_name, "b");
  EXPECT_EQ(store.ResolveMig({kLayout[0]}).error().code(), StatusCode::kNotFound);
  // The software-slice pod is not a MIG pod.
  EXPECT_FALSE(store.PreferMig(kLayout, 1, Now()).has_value());
}

TEST(AssignmentStoreMigTest, KubeletsOtherInstanceOfTheSameProfileGoesToThePod) {
  AssignmentStore store;
  store.Update({MigPod("a", "1g.18gb", 4, "MIG-1", 10)});
  // kubelet gave MIG-2 (same profile) without asking for a preference: the pod takes it.
  auto a = store.ResolveMig({kLayout[1]});
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ((*a)->pod_name, "a");
  EXPECT_EQ((*a)->units, std::vector<std::string>{"MIG-2"});
  // Another profile never matches.
  store.Update({MigPod("a", "1g.18gb", 4, "MIG-1", 10), MigPod("c", "3g.71gb", 0, "MIG-3", 30)});
  EXPECT_EQ(store.ResolveMig({kLayout[3]}).error().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.ResolveMig({kLayout[1], kLayout[1]}).error().code(),
            StatusCode::kInvalidArgument);
  // The holding survives an Update, so MIG-2 stays a's.
  EXPECT_EQ(store.ResolveMig({kLayout[1]}).value()->pod_name, "a");
}

}  // namespace
}  // namespace vgpu::node
