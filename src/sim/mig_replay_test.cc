#include "sim/mig_replay.h"

#include <gtest/gtest.h>

#include "mig/profiles.h"

namespace vgpu::sim {
namespace {

const mig::ModelTable& H200() { return *mig::ModelByKey("H200"); }

sched::NodeSpec NodeWith(const std::string& name, int gpus) {
  sched::NodeSpec n;
  n.name = name;
  n.cpu_milli = 64000;
  n.memory_mib = 512 * 1024;
  n.gpus.assign(gpus, sched::GpuSpec{0, 81920});
  return n;
}

ReplayJob Job(int64_t arrival_us, int64_t run_us, int gpus, int milli) {
  ReplayJob j;
  j.name = "p" + std::to_string(arrival_us);
  j.request.cpu_milli = 1000;
  j.request.memory_mib = 1024;
  j.request.num_gpus = gpus;
  j.request.gpu_milli = milli;
  j.arrival_us = arrival_us;
  j.run_us = run_us;
  return j;
}

std::string Name(const mig::ModelTable& t, int q) { return std::string(t.profiles[q].name); }

TEST(MigReplay, SharesMapToTheSmallestProfileWithThatMuchMemory) {
  const mig::ModelTable& t = H200();
  EXPECT_EQ(Name(t, ProfileForShare(t, 100)), "1g.18gb");
  EXPECT_EQ(Name(t, ProfileForShare(t, 200)), "1g.35gb");
  EXPECT_EQ(Name(t, ProfileForShare(t, 400)), "3g.71gb");
  EXPECT_EQ(Name(t, ProfileForShare(t, 500)), "7g.141gb");  // 69.5 of 140 GiB is under half
  EXPECT_EQ(Name(t, ProfileForShare(t, 1000)), "7g.141gb");
}

// Eight 1g.18gb pods on one H200: seven fit (the max count), the eighth is refused with one
// memory slice of eight free (12.5% stranded), for every rule; used slices integrate over time.
TEST(MigReplay, RefusalsCountTheSlicesTheyStrand) {
  std::vector<ReplayJob> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back(Job(i, 1'000'000, 1, 100));
  for (auto rule : {mig::PlacementRule::kFragmentationAware, mig::PlacementRule::kFirstFit,
                    mig::PlacementRule::kHami}) {
    SCOPED_TRACE(std::string(mig::PlacementRuleName(rule)));
    MigReplayConfig c{&H200(), rule, 42, 1.0, 10};
    auto r = RunMigReplay({NodeWith("a", 1)}, jobs, c);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->gpus, 1);
    EXPECT_EQ(r->arrivals, 8);
    EXPECT_EQ(r->accepted, 7);
    EXPECT_DOUBLE_EQ(r->stranded_pct, 12.5);
    // 1..6 slices during the first six microseconds, 7 from 6 to the horizon 10: 49 of 80.
    EXPECT_DOUBLE_EQ(r->used_pct, 100.0 * 49 / 80);
  }
}

// Departures free their instances: whole-GPU pods on a two-GPU node come and go; a pod asking
// more GPUs than any node has is unplaceable; CPU-only pods are left out.
TEST(MigReplay, DeparturesFreeInstancesAndOversizedPodsAreUnplaceable) {
  std::vector<ReplayJob> jobs = {Job(0, 5, 2, 1000), Job(1, 5, 1, 1000), Job(5, 5, 2, 1000),
                                 Job(6, 1, 3, 1000), Job(7, 1, 0, 0)};
  MigReplayConfig c{&H200(), mig::PlacementRule::kFirstFit, 42, 1.0, 100};
  auto r = RunMigReplay({NodeWith("a", 2)}, jobs, c);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->arrivals, 3);
  EXPECT_EQ(r->accepted, 2);  // the second arrives while both GPUs are taken
  EXPECT_EQ(r->unplaceable, 1);
  EXPECT_DOUBLE_EQ(r->stranded_pct, 0);
  EXPECT_FALSE(RunMigReplay({NodeWith("a", 2)}, jobs, {nullptr}).has_value());
}

TEST(MigReplay, SameSeedSameResult) {
  std::vector<sched::NodeSpec> nodes;
  for (int i = 0; i < 20; ++i) nodes.push_back(NodeWith("n" + std::to_string(10 + i), 1 + i % 4));
  std::vector<ReplayJob> jobs;
  for (int i = 0; i < 400; ++i) {
    jobs.push_back(Job(i * 2, 50 + (i * 37) % 400, 1, 50 + (i * 97) % 950));
  }
  MigReplayConfig c{&H200(), mig::PlacementRule::kFragmentationAware, 7, 0.5, 800};
  auto a = RunMigReplay(nodes, jobs, c);
  auto b = RunMigReplay(nodes, jobs, c);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->nodes, 10u);
  EXPECT_EQ(a->accepted, b->accepted);
  EXPECT_EQ(a->accepted_by_profile, b->accepted_by_profile);
  EXPECT_LT(a->accepted, a->arrivals);  // the case is loaded
  EXPECT_GT(a->accepted, 0);
}

}  // namespace
}  // namespace vgpu::sim
