// The estimator against the published measurements of measured_points.json: weights within 1%,
// KV-cache tokens within 2% of what the logged budget holds, vLLM's start / no-start right, and
// training peaks within 15% where the source states the whole setup. The misses of the other
// points are reported in docs/estimate.md, not asserted.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "estimate/validation.h"

namespace vgpu::estimate {
namespace {

std::vector<PointResult> Results() {
  std::ifstream in(VGPU_MEASURED_POINTS);
  std::stringstream text;
  text << in.rdbuf();
  auto results = ValidatePoints(text.str());
  EXPECT_TRUE(results.has_value()) << results.error().message();
  return results.value_or(std::vector<PointResult>{});
}

TEST(MeasuredPoints, AtLeastTwelveWithSources) {
  const auto results = Results();
  EXPECT_GE(results.size(), 12u);
  std::map<std::string, int> kinds;
  for (const PointResult& r : results) {
    EXPECT_FALSE(r.source.empty()) << r.id;
    ++kinds[r.kind];
  }
  EXPECT_GE(kinds["weights"], 4);
  EXPECT_GE(kinds["kv_tokens"], 4);
  EXPECT_GE(kinds["fit"], 4);
  EXPECT_GE(kinds["training_peak"], 2);
}

TEST(MeasuredPoints, KvTokensAndFitMeetTheirTargets) {
  for (const PointResult& r : Results()) {
    if (r.kind == "kv_tokens" || r.kind == "fit") {
      EXPECT_TRUE(r.ok) << r.id << ": " << r.error * 100 << "%";
    }
  }
}

// Weights within 1% on every point: vLLM's figure is the allocator's blocks of its tensors
// (vllm_load.h), which the estimate reproduces.
TEST(MeasuredPoints, WeightsWithinOnePercent) {
  int within = 0;
  for (const PointResult& r : Results()) {
    if (r.kind != "weights") continue;
    EXPECT_TRUE(r.ok) << r.id << ": " << r.error * 100 << "%";
    within += r.ok;
  }
  EXPECT_GE(within, 7);
}

// Training peaks of the setups the source states in full are within 15%; the partly known ones
// (docs/estimate.md says what each source leaves open) are reported, not asserted.
TEST(MeasuredPoints, FullyKnownTrainingPeaks) {
  int fully_known = 0;
  for (const PointResult& r : Results()) {
    if (r.kind != "training_peak" || !r.fully_known) continue;
    ++fully_known;
    EXPECT_TRUE(r.ok) << r.id << ": " << r.error * 100 << "%";
  }
  EXPECT_GE(fully_known, 2);
}

// torchtune's 'Optimization flags' table turns on one technique at a time (torch.compile, the
// chunked cross-entropy, checkpointing, the optimizer step in the backward pass): the estimate
// must move the same way as the measurement at every step, whatever its level.
TEST(MeasuredPoints, EachTorchtuneFlagMovesTheEstimateAsItMovedTheMeasurement) {
  std::vector<PointResult> flags;
  for (const PointResult& r : Results()) {
    if (r.id.rfind("torchtune-flags-llama32-3b-", 0) == 0) flags.push_back(r);
  }
  ASSERT_EQ(flags.size(), 5u);
  for (size_t i = 1; i < flags.size(); ++i) {
    const double measured = flags[i].measured - flags[i - 1].measured;
    const double estimated = flags[i].estimated - flags[i - 1].estimated;
    EXPECT_LT(measured, 0) << flags[i].id;
    EXPECT_LT(estimated, 0) << flags[i].id << ": " << estimated << " GiB";
  }
}

}  // namespace
}  // namespace vgpu::estimate
