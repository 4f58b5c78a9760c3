#include "sim/published.h"

#include <cctype>
#include <charconv>

#include "common/csv.h"
#include "common/quote.h"

namespace vgpu::sim {

std::string PublishedResults::PolicyName(std::string_view published) {
  size_t dash = published.find('-');
  if (dash != std::string_view::npos && dash > 0 &&
      std::isdigit(static_cast<unsigned char>(published[0]))) {
    published.remove_prefix(dash + 1);
  }
  std::string name;
  for (char c : published) name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.rfind("gpu", 0) == 0 && (name == "gpuclustering" || name == "gpupacking")) {
    name = name.substr(3);
  }
  return name;
}

Result<PublishedResults> PublishedResults::Load(const std::string& path) {
  auto table = CsvTable::Load(path);
  if (!table) return table.error();
  const CsvTable& t = *table;
  auto wcol = t.RequireColumn("workload");
  if (!wcol) return wcol.error();
  auto pcol = t.RequireColumn("policy");
  if (!pcol) return pcol.error();
  auto scol = t.RequireColumn("stat_over_10_seeds");
  if (!scol) return scol.error();
  std::vector<std::pair<int, int>> levels;  // (column, arrived pct)
  for (size_t c = 0; c < t.header().size(); ++c) {
    const std::string& h = t.header()[c];
    if (h.rfind("arrived_", 0) != 0 || h.size() < 12 || h.substr(h.size() - 3) != "pct") continue;
    int pct = 0;
    const char* b = h.data() + 8;
    const char* e = h.data() + h.size() - 3;
    auto [ptr, ec] = std::from_chars(b, e, pct);
    if (ec != std::errc() || ptr != e) continue;
    levels.emplace_back(static_cast<int>(c), pct);
  }
  if (levels.empty()) {
    return Status::InvalidArgument(path + ":1: no arrived_<N>pct columns");
  }
  PublishedResults out;
  out.source_ = path;
  for (size_t row = 0; row < t.num_rows(); ++row) {
    const std::string workload(t.Field(row, *wcol));
    const std::string policy = PolicyName(t.Field(row, *pcol));
    const std::string_view stat = t.Field(row, *scol);
    if (stat != "mean" && stat != "median" && stat != "stdev") {
      return t.FieldError(row, *scol, "expected mean, median or stdev, got " + Quote(stat));
    }
    for (const auto& [col, pct] : levels) {
      std::string_view f = t.Field(row, col);
      double v = 0;
      auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
      if (f.empty() || ec != std::errc() || ptr != f.data() + f.size()) {
        return t.FieldError(row, col, Quote(f) + " is not a number");
      }
      PublishedStat& s = out.stats_[{workload, policy, pct}];
      (stat == "mean" ? s.mean : stat == "median" ? s.median : s.sd) = v;
    }
  }
  return out;
}

bool PublishedResults::HasWorkload(const std::string& workload) const {
  auto it = stats_.lower_bound({workload, "", 0});
  return it != stats_.end() && std::get<0>(it->first) == workload;
}

std::optional<PublishedStat> PublishedResults::Find(const std::string& workload,
                                                    const std::string& policy,
                                                    int arrived_pct) const {
  auto it = stats_.find({workload, policy, arrived_pct});
  if (it == stats_.end()) return std::nullopt;
  return it->second;
}

}  // namespace vgpu::sim
