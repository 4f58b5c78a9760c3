// Reports of a snapshot experiment: the CSV of every run, a terminal table, a JSON summary.
//
// CSV: header `policy,seed,arrived_pct,allocated_pct,unallocated_pct,frag_rate_pct`, one row per
// policy, seed and arrived level, values with two decimals.
// Table: per policy, unallocated % at 90/95/100/110/120/130% arrived as mean±sd over the seeds,
// then, when the published results know the trace, the published mean at 100% and our mean minus
// it, and the mean number of pods that fit nowhere.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "sim/experiment.h"
#include "sim/published.h"

namespace vgpu::sim {

struct ReportInfo {
  std::string trace;  // pod list name, e.g. "openb_pod_list_default"
  size_t pods = 0;    // in the pod list
  size_t nodes = 0;
  int64_t gpus = 0;
  double inflate = 1.3;
  std::vector<uint64_t> seeds;
  const PublishedResults* published = nullptr;  // may be null
};

inline constexpr int kTableLevels[] = {90, 95, 100, 110, 120, 130};

std::string CsvText(const std::vector<PolicyRuns>& runs);
std::string FormatTable(const std::vector<PolicySummary>& summaries, const ReportInfo& info);
std::string FormatJson(const std::vector<PolicySummary>& summaries, const ReportInfo& info);

// Writes `text` to `path` (kIoError naming the path on failure).
Status WriteTextFile(const std::string& path, const std::string& text);

// "42-44" for consecutive seeds, else "42,50".
std::string FormatSeeds(const std::vector<uint64_t>& seeds);

}  // namespace vgpu::sim
