// Memory right-sizing: a recommended memory limit per workload, with the risk that the workload
// exceeds it in the next window. Pure.
//
// Protocol (the NOTICE's, data/alibaba-genai-2026): non-overlapping windows of `window` slots
// (63 x 57 s, about an hour); at each window boundary b a rule recommends a limit R from the
// samples before b, and is judged against the maximum M of the next window, for windows where the
// workload holds memory (M > 0). Exceeded: M > R. Slack: (R - M) / R where it holds.
// - Trailing-maximum rule (the NOTICE's baseline): R = factor x max of the last window.
// - Ours: R = margin x the maximum of all the workload's history, where margin is the
//   (1 - target) quantile of the ratio M / history-maximum over the fitting windows of every
//   workload (boundaries whose next window ends in the first half of the slots). Judged on the
//   windows that start in the second half.
// - A workload's risk: its own past exceedances of the rule shrunk toward the fleet rate,
//   (k + target x kPrior) / (n + kPrior) with kPrior = 10 windows.
#pragma once

#include <string>
#include <vector>

#include "analyze/series.h"

namespace vgpu::analyze {

struct RightsizeOptions {
  size_t window = 63;
  double target = 0.05;  // exceedance the margin is fitted for
};

struct RuleScore {
  size_t windows = 0, exceeded = 0;
  double slack_sum = 0;  // over windows that held
  double ExceedRate() const { return windows ? static_cast<double>(exceeded) / windows : 0; }
  double MeanSlack() const {
    size_t held = windows - exceeded;
    return held ? slack_sum / static_cast<double>(held) : 0;
  }
};

struct Recommendation {
  std::string id;
  double limit = 0;  // bytes
  double peak = 0;   // history maximum, bytes
  double risk = 0;   // estimated probability the next window exceeds `limit`
  size_t history_windows = 0, history_exceeded = 0;
};

struct RightsizeReport {
  double margin = 0;             // fitted
  RuleScore ours;                // judged on the second half
  RuleScore trailing_1_1;        // trailing maximum x 1.1, second half
  RuleScore trailing_1_1_all;    // trailing maximum x 1.1, all windows (the NOTICE's figure)
  double equal_rate_factor = 0;  // factor at which the trailing maximum is exceeded no more often
  RuleScore trailing_equal;      // than ours, and its score
  std::vector<Recommendation> recommendations;  // at the end of the series, per workload
};

// Scores the trailing-maximum rule with `factor`; `first_boundary` .. windows that start there.
RuleScore ScoreTrailingMax(const SeriesSet& memory, const RightsizeOptions& o, double factor,
                           size_t first_start);
RightsizeReport Rightsize(const SeriesSet& memory, const RightsizeOptions& o);

}  // namespace vgpu::analyze
