// MigManager against the simulated NVML (a private H200 in MIG mode): create and destroy for
// pods, overlap refused, the journal, and crash safety: a process running the manager is killed
// with SIGKILL at random points of create and destroy (20 runs); a new manager's Recover() then
// leaves no leaked instance and none claimed twice, and every pod's instance can be made again.
#include "node/modes/mig_manager.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "device/fake_backend.h"
#include "device/nvml_backend.h"
#include "support/temp_dir.h"

namespace vgpu::node {
namespace {

constexpr int k3g = 9, k1g = 19, k1gDouble = 15;  // H200 profile ids

class SimulatedH200 {
 public:
  SimulatedH200() {
    if (!tmp_.ok()) ADD_FAILURE() << tmp_.error();
    dir_ = tmp_.path();
    std::ofstream(dir_ + "/simgpu.conf") << "model=h200 mig=on\n";
    setenv("VGPU_SIMGPU_CONFIG", (dir_ + "/simgpu.conf").c_str(), 1);
    setenv("VGPU_SIMGPU_STATE", (dir_ + "/state").c_str(), 1);
  }
  std::string journal() const { return dir_ + "/mig-claims"; }

  static std::unique_ptr<device::NvmlBackend> Open() {
    device::NvmlBackendOptions options;
    options.library_path = VGPU_SIM_NVML;
    options.cuda_library_path = "";
    auto backend = device::NvmlBackend::Open(options);
    if (!backend) return nullptr;
    if (!(*backend)->Discover()) return nullptr;
    return std::move(*backend);
  }

 private:
  vgpu::testing::TempDir tmp_{"vgpu-mig-manager"};
  std::string dir_;
};

TEST(MigManager, CreatesDestroysAndRefusesOverlap) {
  SimulatedH200 sim;
  auto backend = SimulatedH200::Open();
  ASSERT_NE(backend, nullptr);
  MigManager m(backend.get(), sim.journal());
  ASSERT_TRUE(m.Recover({0}).ok());
  auto a = m.Acquire("pod-a", 0, k3g, 0);
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->profile, "3g.71gb");
  EXPECT_EQ(a->uuid.rfind("MIG-", 0), 0u);
  auto again = m.Acquire("pod-a", 0, k3g, 0);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->uuid, a->uuid);  // idempotent: the same instance
  auto overlap = m.Acquire("pod-b", 0, k1g, 2);
  ASSERT_FALSE(overlap);
  EXPECT_EQ(overlap.error().code(), StatusCode::kResourceExhausted);
  auto b = m.Acquire("pod-b", 0, k1g, 4);
  ASSERT_TRUE(b) << b.error().ToString();
  EXPECT_EQ(backend->MigInstances(0)->size(), 2u);
  EXPECT_EQ(m.ReleaseGone({"pod-b"}), 1);
  auto left = backend->MigInstances(0);
  ASSERT_TRUE(left);
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].uuid, b->uuid);
  // Two pods in one instance (software slices inside it): it stays until both are gone.
  auto shared = m.Acquire("pod-c", 0, k1g, 4);
  ASSERT_TRUE(shared) << shared.error().ToString();
  EXPECT_EQ(shared->uuid, b->uuid);
  EXPECT_EQ(m.ReleaseGone({"pod-c"}), 0);
  EXPECT_EQ(m.Claims()[0].pods, std::vector<std::string>{"pod-c"});
  EXPECT_EQ(backend->MigInstances(0)->size(), 1u);
  // A restart keeps the instance and its claim.
  MigManager restarted(backend.get(), sim.journal());
  ASSERT_TRUE(restarted.Recover({0}).ok());
  ASSERT_EQ(restarted.Claims().size(), 1u);
  EXPECT_EQ(restarted.Claims()[0].uuid, b->uuid);
  EXPECT_EQ(restarted.ReleaseGone({}), 1);
  EXPECT_TRUE(backend->MigInstances(0)->empty());
}

// GPM per MIG GPU instance (nvmlGpmMigSampleGet on the simulated H200): every instance gets its
// own metrics from the second sample on.
TEST(MigManager, GpmMetricsPerGpuInstance) {
  SimulatedH200 sim;
  auto backend = SimulatedH200::Open();
  ASSERT_NE(backend, nullptr);
  auto a = backend->CreateMigInstance(0, k3g, 0);
  auto b = backend->CreateMigInstance(0, k1g, 4);
  ASSERT_TRUE(a && b);
  auto first = backend->Sample(0);
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->mig_gpm.empty());  // the first sample starts the interval
  usleep(120'000);
  auto second = backend->Sample(0);
  ASSERT_TRUE(second);
  std::set<int> gis;
  for (const device::MigGpmSample& g : second->mig_gpm) {
    gis.insert(g.gi_id);
    ASSERT_TRUE(g.metrics.sm_activity.has_value());
    EXPECT_EQ(*g.metrics.sm_activity, 0);  // nothing ran
  }
  EXPECT_EQ(gis, (std::set<int>{a->gi_id, b->gi_id}));
}

TEST(MigManager, RecoverDestroysUnclaimedInstances) {
  SimulatedH200 sim;
  auto backend = SimulatedH200::Open();
  ASSERT_NE(backend, nullptr);
  ASSERT_TRUE(backend->CreateMigInstance(0, k1g, 6));  // made by no claim
  MigManager m(backend.get(), sim.journal());
  ASSERT_TRUE(m.Recover({0}).ok());
  EXPECT_TRUE(backend->MigInstances(0)->empty());
}

TEST(MigManager, JournalRejectsMalformedLines) {
  auto bad = ParseMigJournal("pod 0 19 4 1 GPU-x\n", "claims");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("claims:1"), std::string::npos);
  auto good = ParseMigJournal(
      FormatMigJournal({{{"p", "r"}, 1, 9, 4, 4, "MIG-a"}, {{"q"}, 0, 19, 6, 1, ""}}), "claims");
  ASSERT_TRUE(good);
  ASSERT_EQ(good->size(), 2u);
  EXPECT_EQ((*good)[0].uuid, "MIG-a");
  EXPECT_EQ((*good)[0].pods, (std::vector<std::string>{"p", "r"}));
  EXPECT_EQ((*good)[1].uuid, "");
}

// The pods the crashing process cycles through: (pod, profile id, start).
struct Want {
  const char* pod;
  int profile_id;
  int start;
};
constexpr Want kPods[] = {{"pod-a", k3g, 0}, {"pod-b", k1g, 4}, {"pod-c", k1gDouble, 6}};

[[noreturn]] void CrashingChild(const std::string& journal) {
  auto backend = SimulatedH200::Open();
  if (backend == nullptr) _exit(3);
  MigManager m(backend.get(), journal);
  if (!m.Recover({0}).ok()) _exit(4);
  for (;;) {
    for (const Want& w : kPods) {
      if (!m.Acquire(w.pod, 0, w.profile_id, w.start)) _exit(5);
    }
    m.ReleaseGone({});
  }
}

TEST(MigManager, SigkillDuringCreateAndDestroyLeavesNothingLeakedOrShared) {
  SimulatedH200 sim;
  auto backend = SimulatedH200::Open();
  ASSERT_NE(backend, nullptr);
  std::mt19937 rng(20260501);
  std::map<size_t, int> instances_at_kill;  // how many instances a kill left, over the runs
  for (int run = 0; run < 20; ++run) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) CrashingChild(sim.journal());
    usleep(std::uniform_int_distribution<int>(2000, 25000)(rng));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "run " << run << ": the child exited " << status;
    instances_at_kill[backend->MigInstances(0)->size()]++;

    MigManager m(backend.get(), sim.journal());
    ASSERT_TRUE(m.Recover({0}).ok()) << "run " << run;
    auto instances = backend->MigInstances(0);
    ASSERT_TRUE(instances);
    std::set<std::string> claimed;
    for (const MigClaim& c : m.Claims()) {
      if (c.uuid.empty()) continue;
      EXPECT_TRUE(claimed.insert(c.uuid).second) << "run " << run << ": " << c.uuid << " twice";
    }
    for (const device::MigInstance& i : *instances) {
      EXPECT_GE(i.ci_id, 0) << "run " << run << ": a half-made instance survived";
      EXPECT_TRUE(claimed.count(i.uuid)) << "run " << run << ": leaked " << i.uuid;
    }
    EXPECT_EQ(claimed.size(), instances->size()) << "run " << run;
    // Every pod can get its instance now (nothing blocks its placement), each a distinct one.
    std::set<std::string> uuids;
    for (const Want& w : kPods) {
      auto got = m.Acquire(w.pod, 0, w.profile_id, w.start);
      ASSERT_TRUE(got) << "run " << run << ": " << got.error().ToString();
      EXPECT_TRUE(uuids.insert(got->uuid).second);
    }
    EXPECT_EQ(backend->MigInstances(0)->size(), 3u);
    // Alternate: leave them for the next child to find, or release them first.
    if (run % 2 == 1) {
      EXPECT_EQ(m.ReleaseGone({}), 3);
      EXPECT_TRUE(backend->MigInstances(0)->empty());
    }
  }
  // The kills landed at different points (0 to 3 instances standing).
  EXPECT_GE(instances_at_kill.size(), 2u);
}

TEST(MigManager, FakeBackendWithoutMigRefuses) {
  device::FakeBackend fake;
  fake.AddDefaultDevices(1);
  MigManager m(&fake, "");
  EXPECT_FALSE(m.Recover({0}).ok());
  EXPECT_FALSE(m.Acquire("p", 0, k1g, 0));
}

}  // namespace
}  // namespace vgpu::node
