// An SVG line chart like Figure 9(a) of the FGD paper: unallocated GPU % (y) against arrived
// workload % of GPU capacity (x, 75..130 by default), one line per policy (mean over seeds), with
// the ideal "everything fits" line (100 - x, then 0) dashed for reference. Self-contained SVG 1.1,
// no scripts or external fonts.
#pragma once

#include <string>
#include <vector>

#include "sim/experiment.h"

namespace vgpu::sim {

struct ChartOptions {
  std::string title;
  std::string subtitle;
  int x_min = 75;
  int x_max = 130;
};

std::string RenderChart(const std::vector<PolicySummary>& summaries, const ChartOptions& opt);

}  // namespace vgpu::sim
