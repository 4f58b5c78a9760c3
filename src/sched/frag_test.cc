#include "sched/frag.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/rng.h"
#include "sched/test_util.h"

namespace vgpu::sched {
namespace {

using testing::Spec;

// Node: 8 cores free, four T4 (model 0) with 1000, 500, 200 and 0 milli free (1700 in all).
const std::vector<int32_t> kFree = {1000, 500, 200, 0};
const std::vector<ModelId> kModels = {0, 0, 0, 0};

TEST(Frag, SpecFragByHand) {
  // CPU-only spec: all free GPU milli is fragment.
  EXPECT_EQ(SpecFrag(Spec(4000, 0, 0, 1), 8000, kFree, kModels), 1700);
  // 300 milli: GPUs with 1000 and 500 fit; the 200 (and the 0) are fragment.
  EXPECT_EQ(SpecFrag(Spec(4000, 1, 300, 1), 8000, kFree, kModels), 200);
  // Not enough CPU: everything is fragment.
  EXPECT_EQ(SpecFrag(Spec(16000, 1, 600, 1), 8000, kFree, kModels), 1700);
  // Two whole GPUs but only one is idle: everything.
  EXPECT_EQ(SpecFrag(Spec(1000, 2, 1000, 1), 8000, kFree, kModels), 1700);
  // Model not allowed: everything.
  EXPECT_EQ(SpecFrag(Spec(1000, 1, 1000, 1, ModelSet::Of(1)), 8000, kFree, kModels), 1700);
  // One whole GPU fits on the idle one: the 500 and 200 are fragment.
  EXPECT_EQ(SpecFrag(Spec(1000, 1, 1000, 1), 8000, kFree, kModels), 700);
}

TEST(Frag, NodeFragIsTheWeightedSum) {
  std::vector<WorkloadSpec> m = {Spec(4000, 0, 0, 0.1),
                                 Spec(4000, 1, 300, 0.4),
                                 Spec(16000, 1, 600, 0.1),
                                 Spec(1000, 2, 1000, 0.1),
                                 Spec(1000, 1, 1000, 0.1, ModelSet::Of(1)),
                                 Spec(1000, 1, 1000, 0.2)};
  FragModel model(m);
  // 0.1*1700 + 0.4*200 + 0.1*1700 + 0.1*1700 + 0.1*1700 + 0.2*700 = 900
  EXPECT_NEAR(model.NodeFrag(8000, kFree, kModels), 900.0, 1e-9);
  // No free GPU: no fragment.
  std::vector<int32_t> none = {0, 0, 0, 0};
  EXPECT_EQ(model.NodeFrag(8000, none, kModels), 0.0);
}

TEST(Frag, GroupedEvaluationMatchesDefinitionOnRandomStates) {
  Rng rng(7);
  std::vector<WorkloadSpec> m;
  for (int i = 0; i < 30; ++i) {
    const int num = static_cast<int>(rng.UniformInt(4));
    const int32_t milli =
        num == 0 ? 0 : (num > 1 ? 1000 : 50 + 50 * static_cast<int32_t>(rng.UniformInt(20)));
    ModelSet models;
    if (rng.UniformInt(3) == 0) models.Add(static_cast<ModelId>(rng.UniformInt(3)));
    m.push_back(
        Spec(1000 * static_cast<int64_t>(rng.UniformInt(40)), num, milli, 1.0 / 30, models));
  }
  FragModel model(m);
  for (int trial = 0; trial < 500; ++trial) {
    const size_t gpus = rng.UniformInt(9);
    std::vector<int32_t> free(gpus);
    std::vector<ModelId> models(gpus);
    for (size_t i = 0; i < gpus; ++i) {
      free[i] = static_cast<int32_t>(rng.UniformInt(21)) * 50;
      models[i] = static_cast<ModelId>(rng.UniformInt(3));
    }
    const int64_t cpu = 1000 * static_cast<int64_t>(rng.UniformInt(50));
    double expected = 0;
    for (const WorkloadSpec& s : m) expected += s.weight * SpecFrag(s, cpu, free, models);
    EXPECT_NEAR(model.NodeFrag(cpu, free, models), expected, 1e-6);
  }
}

}  // namespace
}  // namespace vgpu::sched
