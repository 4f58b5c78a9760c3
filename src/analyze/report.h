// The `vgpu analyze` reports: each runs one analysis on series files and renders it as text or
// JSON. Errors (a bad file) come back as the Status of the reader (file, line, column).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::analyze {

struct AnomalyRequest {
  std::string util, memory;  // files; empty = none
  bool evaluate = false;
  std::vector<uint64_t> seeds = {1, 2, 3, 4, 5};
  double leak_gib_per_hour = 1.0;  // the generator's leak rate for --evaluate
  bool unmatched = false;          // --evaluate: also list the detections that match no label
  bool json = false;
};
Result<std::string> RunAnomalies(const AnomalyRequest& r);

struct ForecastRequest {
  std::string util;
  std::string groups;  // optional CSV: series (or container_ip, pod, slice), node

  size_t horizon = 5;
  bool json = false;
};
// The cluster load (sum of the series) and every series: the model judged against persistence
// and EWMA(0.3) (judged on the second half, the first for reference), the medians over the
// series judged one by one with the number each baseline loses on (forecast.h SummarizePanel),
// and the forecast `horizon` slots (minutes) after the last sample. With `groups`, also the sum of each node's series
// ("node:NAME"); a groups row naming a series the file lacks is an error (file, line, column).
Result<std::string> RunForecast(const ForecastRequest& r);

struct RightsizeRequest {
  std::string memory;
  double target = 0.05;
  bool json = false;
};
Result<std::string> RunRightsize(const RightsizeRequest& r);

struct RulesRequest {
  std::string rules, series;
  bool json = false;
};
// Dry run: what the rules would have done over the series (every Fire and Resolve, in order).
Result<std::string> RunRulesDryRun(const RulesRequest& r);

}  // namespace vgpu::analyze
