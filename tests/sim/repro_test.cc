// Reproduction of the FGD paper's published results: for every bundled trace with published
// results, each of the six baseline policies must leave within 1.0 percentage point of the
// published mean unallocated GPU % at 100% arrived workload, over seeds 42-51.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <thread>

#include "sim/experiment.h"
#include "sim/published.h"
#include "trace_fixture.h"

namespace vgpu::sim {
namespace {

constexpr double kTolerancePp = 1.0;

class Reproduction : public ::testing::TestWithParam<std::string> {};

TEST_P(Reproduction, BaselinesWithinOnePointOfPublishedAt100) {
  auto published = PublishedResults::Load(testing::kDataDir + "fgd_published_unallocated_pct.csv");
  ASSERT_TRUE(published.has_value()) << published.error().message();
  testing::LoadedTrace trace = testing::LoadTrace(GetParam());
  ASSERT_FALSE(trace.input.pods.empty());
  ExperimentOptions opt;
  opt.policies = {"random", "dotprod", "clustering", "packing", "bestfit", "fgd"};
  for (uint64_t s = 42; s <= 51; ++s) opt.seeds.push_back(s);
  opt.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto runs = RunExperiment(trace.input, opt);
  ASSERT_TRUE(runs.has_value()) << runs.error().message();
  for (const PolicyRuns& r : *runs) {
    const PolicySummary s = Aggregate(r);
    const LevelStats* ours = FindLevel(s, 100);
    ASSERT_NE(ours, nullptr) << r.policy;
    auto pub = published->Find(trace.input.trace_name, r.policy, 100);
    ASSERT_TRUE(pub.has_value()) << trace.input.trace_name << " " << r.policy;
    std::printf("%-24s %-10s ours %5.2f±%.2f  published %5.2f±%.2f  delta %+.2f\n",
                trace.input.trace_name.c_str(), r.policy.c_str(), ours->unallocated.mean,
                ours->unallocated.sd, pub->mean, pub->sd, ours->unallocated.mean - pub->mean);
    EXPECT_LE(std::fabs(ours->unallocated.mean - pub->mean), kTolerancePp)
        << trace.input.trace_name << " " << r.policy;
  }
}

INSTANTIATE_TEST_SUITE_P(BundledTraces, Reproduction,
                         ::testing::Values("default", "cpu050", "cpu100", "gpushare40", "gpuspec10",
                                           "multigpu20"));

}  // namespace
}  // namespace vgpu::sim
