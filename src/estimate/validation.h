// Checks the estimator against published measurements (tests/estimate/measured_points.json; the
// format is described in its "about" field): for each point the estimate, the measurement and
// the signed error (estimate / measured − 1), or for fit points whether the prediction matches.
// `vgpu estimate --validate FILE` prints the table docs/estimate.md reports.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace vgpu::estimate {

struct PointResult {
  std::string id;
  std::string kind;  // weights | kv_tokens | fit | training_peak
  bool fully_known = true;
  double estimated = 0;  // GiB, tokens, or 1/0 for fit
  double measured = 0;
  double error = 0;  // signed relative error; fit: 0 when right, 1 when wrong
  bool ok = false;   // within the target of its kind (weights 1%, KV 2%, fit right, training 15%)
  std::string source;
};

Result<std::vector<PointResult>> ValidatePoints(std::string_view json_text);
std::string RenderValidation(const std::vector<PointResult>& results);

}  // namespace vgpu::estimate
