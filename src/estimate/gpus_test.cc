#include "estimate/gpus.h"

#include <gtest/gtest.h>

#include "estimate/formulas.h"
#include "hw/gpu_models.h"
#include "mig/profiles.h"

namespace vgpu::estimate {
namespace {

// The estimator's GPUs are hw's models marked for it, in hw's order, with the estimator's memory.
TEST(EstimateGpus, AreHwsModelsMarkedForTheEstimator) {
  std::vector<std::string> names;
  for (const GpuModel& g : KnownGpus()) {
    SCOPED_TRACE(g.name);
    names.push_back(g.name);
    const hw::GpuModel* m = hw::FindGpuModel(g.name);
    ASSERT_NE(m, nullptr);
    EXPECT_TRUE(m->estimate);
    EXPECT_EQ(g.memory, static_cast<double>(m->EstimateMemoryMib()) * kMiB);
    EXPECT_EQ(g.sms, m->sm_count);
    EXPECT_EQ(g.mig_table, m->mig_table);
    EXPECT_EQ(MigProfilesFor(g).empty(), m->mig_table.empty());
  }
  size_t marked = 0;
  for (const hw::GpuModel& m : hw::AllGpuModels()) marked += m.estimate ? 1 : 0;
  EXPECT_EQ(names.size(), marked);
  // The list as `vgpu estimate --list-gpus` has always printed it.
  EXPECT_EQ(names,
            (std::vector<std::string>{"t4", "a10g", "l4", "rtx-4090", "v100-32gb", "a100-40gb",
                                      "l40s", "a6000", "a100-80gb", "h100-80gb", "h200"}));
}

TEST(EstimateGpus, LookupIsExactAndKeepsTheEstimatorsFigures) {
  ASSERT_TRUE(FindGpu("A100-40GB"));
  EXPECT_EQ(FindGpu("A100-40GB")->memory, 40960 * kMiB);  // not NVML's 40536 MiB (the MIG table's)
  EXPECT_EQ(FindGpu("h100-80gb")->memory, 81559 * kMiB);
  EXPECT_EQ(FindGpu("h200")->mig_table, "H200");
  EXPECT_FALSE(FindGpu("a30"));  // a hw model with a MIG table, not one the estimator lists
  EXPECT_FALSE(FindGpu("h100"));
  EXPECT_FALSE(FindGpu("H100-80GB "));
  EXPECT_EQ(LargestGpuMemory(), 143771 * kMiB);
  EXPECT_EQ(MigProfilesFor(*FindGpu("a100-40gb")).front().name, "1g.5gb");
  EXPECT_TRUE(MigProfilesFor(*FindGpu("l4")).empty());
}

}  // namespace
}  // namespace vgpu::estimate
