#include "analyze/series.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "common/csv.h"

namespace vgpu::analyze {
namespace {

Result<double> GetNumber(const CsvTable& t, size_t row, int col) {
  std::string_view f = t.Field(row, col);
  double v = 0;
  const char* end = f.data() + f.size();
  auto [p, ec] = std::from_chars(f.data(), end, v);
  if (f.empty() || ec != std::errc() || p != end || !std::isfinite(v)) {
    return t.FieldError(row, col,
                        f.empty() ? "empty, a number is needed"
                                  : "\"" + std::string(f) + "\" is not a finite number");
  }
  return v;
}

int FirstColumn(const CsvTable& t, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    int c = t.FindColumn(n);
    if (c >= 0) return c;
  }
  return -1;
}

Result<SeriesSet> FromTable(const CsvTable& t) {
  const int vcol = t.FindColumn("value");
  const int tcol = FirstColumn(t, {"timestamp_anon", "timestamp"});
  const int icol = FirstColumn(t, {"container_ip", "pod", "slice", "series"});
  if (vcol < 0 || tcol < 0 || icol < 0) {
    return Status::InvalidArgument(
        t.source() +
        ":1: the header needs the columns value, timestamp_anon (or timestamp) and "
        "container_ip (or pod, slice, series)");
  }
  if (t.num_rows() == 0) return Status::InvalidArgument(t.source() + ": no rows");
  struct Row {
    double ts, v;
    size_t row;
  };
  std::map<std::string, std::vector<Row>> by_id;
  std::vector<double> stamps;
  stamps.reserve(t.num_rows());
  for (size_t r = 0; r < t.num_rows(); ++r) {
    auto v = GetNumber(t, r, vcol);
    if (!v) return v.error();
    if (*v < 0) return t.FieldError(r, vcol, "negative value");
    auto ts = GetNumber(t, r, tcol);
    if (!ts) return ts.error();
    std::string id(t.Field(r, icol));
    if (id.empty()) return t.FieldError(r, icol, "empty identity");
    by_id[id].push_back({*ts, *v, r});
    stamps.push_back(*ts);
  }
  std::sort(stamps.begin(), stamps.end());
  stamps.erase(std::unique(stamps.begin(), stamps.end()), stamps.end());
  SeriesSet set;
  set.source = t.source();
  set.t0 = stamps.front();
  if (stamps.size() == 1) {
    set.step = 1;
  } else {
    std::map<double, size_t> diffs;
    for (size_t i = 1; i < stamps.size(); ++i) ++diffs[stamps[i] - stamps[i - 1]];
    size_t best = 0;
    for (auto& [d, n] : diffs) {
      if (n > best) best = n, set.step = d;
    }
  }
  set.length = static_cast<size_t>(std::llround((stamps.back() - set.t0) / set.step)) + 1;
  for (auto& [id, rows] : by_id) {
    Series s{id, std::vector<double>(set.length, kMissing)};
    for (const Row& r : rows) {
      double pos = (r.ts - set.t0) / set.step;
      long slot = std::lround(pos);
      if (std::fabs(pos - static_cast<double>(slot)) > 0.25) {
        return t.FieldError(
            r.row, tcol,
            "timestamp is off the " + std::to_string(set.step) + " s grid of the file");
      }
      if (Present(s.values[slot])) {
        return t.FieldError(r.row, tcol, "second sample of '" + id + "' at this timestamp");
      }
      s.values[slot] = r.v;
    }
    set.series.push_back(std::move(s));
  }
  return set;
}

}  // namespace

std::vector<double> SeriesSet::Aggregate() const {
  std::vector<double> sum(length, kMissing);
  for (const Series& s : series) {
    for (size_t i = 0; i < length; ++i) {
      if (Present(s.values[i])) sum[i] = (Present(sum[i]) ? sum[i] : 0) + s.values[i];
    }
  }
  return sum;
}

int SeriesSet::Find(const std::string& id) const {
  for (size_t i = 0; i < series.size(); ++i) {
    if (series[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

Result<SeriesSet> ReadSeriesCsv(const std::string& path) {
  auto t = CsvTable::Load(path);
  if (!t) return t.error();
  return FromTable(*t);
}

Result<SeriesSet> ParseSeriesCsv(std::string_view text, std::string source) {
  auto t = CsvTable::Parse(text, std::move(source));
  if (!t) return t.error();
  return FromTable(*t);
}

size_t CountPresent(const std::vector<double>& v) {
  return static_cast<size_t>(std::count_if(v.begin(), v.end(), Present));
}

}  // namespace vgpu::analyze
