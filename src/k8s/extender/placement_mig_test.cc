// PlacementState with MIG GPUs: filter, score and assume hand out MIG instances (placement_mig.cc).
#include <gtest/gtest.h>

#include <set>

#include "k8s/extender/placement_state.h"
#include "mig/layout.h"
#include "mig/profiles.h"

namespace vgpu::k8s {
namespace {

constexpr int64_t kGiB = 1024;

InventoryGpu H200(const std::string& node, int index, GpuMode mode,
                  std::vector<InventoryMigInstance> mig = {}) {
  InventoryGpu g{
      node + "-GPU-" + std::to_string(index), index, "NVIDIA H200", 143771, 10, true, 0, {}};
  g.mode = mode;
  g.mig = std::move(mig);
  return g;
}

NodeInventory Node(std::vector<InventoryGpu> gpus) {
  NodeInventory inv;
  inv.gpus = std::move(gpus);
  return inv;
}

PodGpuRequest Mem(int64_t mib, std::optional<int> cores = std::nullopt) {
  PodGpuRequest r;
  ContainerGpuRequest c;
  c.name = "main";
  c.count = 1;
  c.memory_mib = mib;
  c.cores = cores;
  r.containers.push_back(c);
  return r;
}

PodGpuRequest Profile(const std::string& profile) {
  PodGpuRequest r;
  ContainerGpuRequest c;
  c.name = "main";
  c.count = 1;
  c.mig_profile = profile;
  r.containers.push_back(c);
  return r;
}

std::unique_ptr<PlacementState> Make() {
  auto s = PlacementState::Create(StateOptions{});
  EXPECT_TRUE(s.has_value());
  return std::move(*s);
}

const AssignedGpu& Only(const AssumeTicket& t) { return t.assignment.containers.at(0).gpus.at(0); }

TEST(PlacementMig, DynamicGpuGetsSmallestProfilesWithoutOverlapAndReleasesThem) {
  auto s = Make();
  s->UpsertNode("n", Node({H200("n", 0, GpuMode::kMigDynamic)}));
  std::vector<AssignedMig> got;
  for (auto [uid, gib] :
       std::vector<std::pair<std::string, int64_t>>{{"a", 10}, {"b", 30}, {"c", 69}}) {
    FilterResult f = s->Filter(Mem(gib * kGiB), {"n"}, {uid, "ns", uid});
    ASSERT_EQ(f.feasible, std::vector<std::string>{"n"}) << gib << " GiB";
    auto t = s->Assume(uid, "ns", uid, Mem(gib * kGiB), "n");
    ASSERT_TRUE(t.has_value()) << t.error().ToString();
    const AssignedGpu& g = Only(*t);
    ASSERT_TRUE(g.mig.has_value());
    EXPECT_EQ(g.uuid, "n-GPU-0");  // the parent GPU
    EXPECT_TRUE(g.mig->uuid.empty());
    EXPECT_EQ(g.memory_mib, gib * kGiB);  // a software slice inside the instance
    got.push_back(*g.mig);
    s->BindSucceeded(uid, t->generation);
  }
  EXPECT_EQ(got[0].profile, "1g.18gb");
  EXPECT_EQ(got[1].profile, "1g.35gb");
  EXPECT_EQ(got[2].profile, "3g.71gb");
  mig::Layout l{mig::ModelByKey("H200"), {}};
  for (const AssignedMig& m : got) {
    ASSERT_TRUE(mig::Add(&l, {l.table->IndexOf(m.profile), m.start}).ok()) << m.profile;
  }
  ASSERT_TRUE(s->CheckConsistency().ok()) << s->CheckConsistency().ToString();
  // Nothing is left for another 3g.71gb: the reason names MIG, and preemption might help.
  FilterResult full = s->Filter(Mem(60 * kGiB), {"n"});
  EXPECT_TRUE(full.feasible.empty());
  ASSERT_EQ(full.failed.count("n"), 1u);
  EXPECT_NE(full.failed["n"].find("MIG: "), std::string::npos) << full.failed["n"];
  // A request larger than the GPU can never fit.
  FilterResult never = s->Filter(Mem(200 * kGiB), {"n"});
  EXPECT_EQ(never.unresolvable.count("n"), 1u);
  // The 69 GiB pod goes away: its placement is free again.
  s->RemovePod("c");
  auto again = s->Assume("d", "ns", "d", Mem(60 * kGiB), "n");
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_EQ(Only(*again).mig->profile, "3g.71gb");
  EXPECT_EQ(Only(*again).mig->start, got[2].start);
  EXPECT_TRUE(s->CheckConsistency().ok());
}

TEST(PlacementMig, InstancesTheNodeReportsAreNotGivenTwice) {
  auto s = Make();
  // The node created 1g.18gb@6 for pod a and reports it; the assignment has no UUID.
  s->UpsertNode("n", Node({H200("n", 0, GpuMode::kMigDynamic, {{"1g.18gb", 6, "MIG-aaaa", 19}})}));
  auto a = s->Assume("a", "ns", "a", Mem(10 * kGiB), "n");
  ASSERT_TRUE(a.has_value());
  const int a_start = Only(*a).mig->start;
  EXPECT_NE(a_start, 6);  // the reported instance is taken
  for (int i = 0; i < 5; ++i) {
    const std::string uid = "p" + std::to_string(i);
    auto t = s->Assume(uid, "ns", uid, Mem(10 * kGiB), "n");
    ASSERT_TRUE(t.has_value()) << i << ": " << t.error().ToString();
  }
  EXPECT_TRUE(s->CheckConsistency().ok()) << s->CheckConsistency().ToString();
  // 7 instances of 1g.18gb is the most an H200 holds.
  auto over = s->Assume("x", "ns", "x", Mem(10 * kGiB), "n");
  ASSERT_FALSE(over.has_value());
  EXPECT_NE(over.error().message().find("MIG"), std::string::npos) << over.error().message();
}

TEST(PlacementMig, StaticLayoutServesNvidiaResourceNamesByUuid) {
  auto s = Make();
  s->UpsertNode("n", Node({H200("n", 0, GpuMode::kMig,
                                {{"2g.35gb", 0, "MIG-2g", 14},
                                 {"1g.18gb", 2, "MIG-1a", 19},
                                 {"1g.18gb", 3, "MIG-1b", 19},
                                 {"3g.71gb", 4, "MIG-3g", 9}})}));
  std::set<std::string> uuids;
  for (const char* uid : {"a", "b"}) {
    ASSERT_EQ(s->Filter(Profile("1g.18gb"), {"n"}).feasible.size(), 1u);
    auto t = s->Assume(uid, "ns", uid, Profile("1g.18gb"), "n");
    ASSERT_TRUE(t.has_value()) << t.error().ToString();
    EXPECT_EQ(Only(*t).mig->profile, "1g.18gb");
    EXPECT_EQ(Only(*t).memory_mib, 16384);  // the whole instance
    uuids.insert(Only(*t).mig->uuid);
  }
  EXPECT_EQ(uuids, (std::set<std::string>{"MIG-1a", "MIG-1b"}));
  FilterResult f = s->Filter(Profile("1g.18gb"), {"n"});
  ASSERT_EQ(f.failed.count("n"), 1u);  // taken now; free again when a pod goes
  EXPECT_NE(f.failed["n"].find("no free 1g.18gb instance"), std::string::npos) << f.failed["n"];
  EXPECT_FALSE(s->Assume("c", "ns", "c", Profile("1g.18gb"), "n").has_value());
  // A profile the layout does not have can never fit here.
  EXPECT_EQ(s->Filter(Profile("7g.141gb"), {"n"}).unresolvable.count("n"), 1u);
  // A memory request takes the smallest free instance that holds it.
  auto m = s->Assume("m", "ns", "m", Mem(20 * kGiB), "n");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(Only(*m).mig->uuid, "MIG-2g");
  s->RemovePod("a");
  EXPECT_EQ(s->Filter(Profile("1g.18gb"), {"n"}).feasible.size(), 1u);
  EXPECT_TRUE(s->CheckConsistency().ok());
}

TEST(PlacementMig, MixedNodeServesSlicesAndInstancesAndProfilePodsAvoidSharedGpus) {
  auto s = Make();
  s->UpsertNode("mixed", Node({H200("mixed", 0, GpuMode::kShared),
                               H200("mixed", 1, GpuMode::kMig, {{"7g.141gb", 0, "MIG-7g", 0}})}));
  s->UpsertNode("shared", Node({H200("shared", 0, GpuMode::kShared)}));
  // A memory request goes to a software slice on the shared GPU first.
  auto slice = s->Assume("a", "ns", "a", Mem(100 * kGiB), "mixed");
  ASSERT_TRUE(slice.has_value());
  EXPECT_FALSE(Only(*slice).mig.has_value());
  EXPECT_EQ(Only(*slice).uuid, "mixed-GPU-0");
  // The shared GPU has 40 GiB left: the next 100 GiB pod gets the 7g instance.
  auto inst = s->Assume("b", "ns", "b", Mem(100 * kGiB), "mixed");
  ASSERT_TRUE(inst.has_value()) << inst.error().ToString();
  ASSERT_TRUE(Only(*inst).mig.has_value());
  EXPECT_EQ(Only(*inst).mig->uuid, "MIG-7g");
  EXPECT_EQ(Only(*inst).uuid, "mixed-GPU-1");
  EXPECT_TRUE(s->CheckConsistency().ok());
  // A profile request never goes to a shared GPU.
  s->RemovePod("b");
  FilterResult f = s->Filter(Profile("7g.141gb"), {"mixed", "shared"});
  EXPECT_EQ(f.feasible, std::vector<std::string>{"mixed"});
  ASSERT_EQ(f.unresolvable.count("shared"), 1u);
  EXPECT_NE(f.unresolvable["shared"].find("mig or mig-dynamic"), std::string::npos)
      << f.unresolvable["shared"];
  EXPECT_FALSE(s->Assume("c", "ns", "c", Profile("7g.141gb"), "shared").has_value());
  // Score: a node where a software slice fits ranks above one that needs a MIG instance.
  s->RemovePod("a");
  s->UpsertNode("mig", Node({H200("mig", 0, GpuMode::kMigDynamic)}));
  std::vector<int64_t> sc = s->Score(Mem(10 * kGiB), {"mig", "shared"});
  EXPECT_GT(sc[1], sc[0]);
  EXPECT_EQ(s->Filter(Mem(10 * kGiB), {"mig", "shared"}).feasible.size(), 2u);
}

TEST(PlacementMig, ScorePrefersTheChoiceThatKeepsTheLargestProfilePlaceable) {
  auto s = Make();
  s->UpsertNode("empty", Node({H200("empty", 0, GpuMode::kMigDynamic)}));
  s->UpsertNode("half", Node({H200("half", 0, GpuMode::kMigDynamic, {{"3g.71gb", 0, "M", 9}})}));
  // A 1g.18gb on "empty" (at 4..6) keeps the 4-slice 4g.71gb@0 placeable; on "half" the best
  // keeps a 2-slice profile.
  std::vector<int64_t> sc = s->Score(Mem(10 * kGiB), {"half", "empty"});
  EXPECT_GT(sc[1], sc[0]);
  EXPECT_EQ(sc[1], 10);
  auto t = s->Assume("a", "ns", "a", Mem(10 * kGiB), "empty");
  ASSERT_TRUE(t.has_value());
  EXPECT_GE(Only(*t).mig->start, 4);
}

TEST(PlacementMig, NarrowModeAnswersTheBestMigNodeAndBindDecidesThere) {
  StateOptions o;
  o.filter_mode = FilterMode::kNarrow;
  auto made = PlacementState::Create(o);
  ASSERT_TRUE(made.has_value());
  auto& s = *made;
  s->UpsertNode("empty", Node({H200("empty", 0, GpuMode::kMigDynamic)}));
  s->UpsertNode("half", Node({H200("half", 0, GpuMode::kMigDynamic, {{"3g.71gb", 0, "M", 9}})}));
  FilterResult f = s->Filter(Mem(10 * kGiB), {"half", "empty"}, {"u", "ns", "p"});
  EXPECT_EQ(f.feasible, std::vector<std::string>{"empty"});
  EXPECT_EQ(f.narrowed, 1u);
  EXPECT_EQ(s->counts().pods_held, 0u);  // no hold of a MIG choice: bind decides it
  auto t = s->Assume("u", "ns", "p", Mem(10 * kGiB), "empty");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ(Only(*t).mig->profile, "1g.18gb");
  EXPECT_EQ(s->counts().pods_assumed, 1u);
  EXPECT_TRUE(s->CheckConsistency().ok());
}

}  // namespace
}  // namespace vgpu::k8s
