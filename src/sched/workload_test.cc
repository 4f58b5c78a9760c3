#include "sched/workload.h"

#include <gtest/gtest.h>

#include "sched/test_util.h"

namespace vgpu::sched {
namespace {

using testing::Pod;

std::vector<PodRequest> Repeat(const PodRequest& r, int n) { return std::vector<PodRequest>(n, r); }

TEST(Workload, TypicalSetByCountWithCoverageCut) {
  std::vector<PodRequest> pods;
  auto add = [&](const std::vector<PodRequest>& v) { pods.insert(pods.end(), v.begin(), v.end()); };
  add(Repeat(Pod(1000, 1, 500), 5));                // A
  add(Repeat(Pod(2000, 1, 1000), 3));               // B
  add(Repeat(Pod(8000), 1));                        // C: ties with D, larger CPU goes first
  add(Repeat(Pod(4000, 1, 1000), 1));               // D
  auto m80 = TypicalWorkload(pods, nullptr, 0.80);  // stop once 8 of 10 pods are covered
  ASSERT_EQ(m80.size(), 2u);
  EXPECT_EQ(m80[0].gpu_milli, 500);
  EXPECT_DOUBLE_EQ(m80[0].weight, 5.0 / 8);
  EXPECT_DOUBLE_EQ(m80[1].weight, 3.0 / 8);
  auto m90 = TypicalWorkload(pods, nullptr, 0.90);
  ASSERT_EQ(m90.size(), 3u);
  EXPECT_EQ(m90[2].cpu_milli, 8000);
  EXPECT_EQ(m90[2].num_gpus, 0);
  EXPECT_DOUBLE_EQ(m90[2].weight, 1.0 / 9);
  EXPECT_EQ(TypicalWorkload(pods, nullptr, 1.0).size(), 4u);
}

TEST(Workload, TiesByMilliThenCountThenModelText) {
  ModelRegistry names;
  const ModelId t4 = *names.Intern("T4");
  const ModelId a10 = *names.Intern("A10");
  PodRequest t4_pod = Pod(1000, 1, 1000);
  t4_pod.models = ModelSet::Of(t4);
  PodRequest a10_pod = Pod(1000, 1, 1000);
  a10_pod.models = ModelSet::Of(a10);
  std::vector<PodRequest> pods = {Pod(1000, 1, 300), Pod(1000, 1, 700), Pod(1000, 2, 300), a10_pod,
                                  t4_pod};
  auto m = TypicalWorkload(pods, &names, 1.0);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].models, ModelSet::Of(t4));  // milli 1000, "T4" > "A10"
  EXPECT_EQ(m[1].models, ModelSet::Of(a10));
  EXPECT_EQ(m[2].gpu_milli, 700);
  EXPECT_EQ(m[3].num_gpus, 2);  // milli 300: 2 GPUs before 1
  EXPECT_EQ(m[4].num_gpus, 1);
}

TEST(Workload, CounterIgnoresMemoryAndCountsOnline) {
  WorkloadCounter c;
  c.Add(Pod(1000, 1, 500, 100));
  c.Add(Pod(1000, 1, 500, 999));
  c.Add(Pod(2000));
  EXPECT_EQ(c.total(), 3);
  EXPECT_EQ(c.distinct(), 2u);
  auto m = c.Typical(nullptr, 0.95);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].count, 2);
  EXPECT_TRUE(WorkloadCounter().Typical(nullptr).empty());
}

}  // namespace
}  // namespace vgpu::sched
