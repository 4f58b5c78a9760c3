// Published results of the FGD paper's simulator (fgd_published_unallocated_pct.csv):
// unallocated GPU % per trace, policy and arrived level, as mean / median / sd over seeds 42-51.
//
// File columns: workload, policy, stat_over_10_seeds, arrived_<N>pct... ; `workload` is the pod
// list's file name without ".csv"; `policy` is the simulator's name ("06-FGD"), mapped to ours
// (random, dotprod, clustering, packing, bestfit, fgd). Errors name file, line and column.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "common/result.h"

namespace vgpu::sim {

struct PublishedStat {
  double mean = 0;
  double median = 0;
  double sd = 0;
};

class PublishedResults {
 public:
  static Result<PublishedResults> Load(const std::string& path);

  bool HasWorkload(const std::string& workload) const;
  std::optional<PublishedStat> Find(const std::string& workload, const std::string& policy,
                                    int arrived_pct) const;
  const std::string& source() const { return source_; }

  // "06-FGD" -> "fgd", "03-GpuClustering" -> "clustering".
  static std::string PolicyName(std::string_view published);

 private:
  std::string source_;
  std::map<std::tuple<std::string, std::string, int>, PublishedStat> stats_;
};

}  // namespace vgpu::sim
