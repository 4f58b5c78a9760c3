// Series: per-pod (or per-slice) metric series read from CSV, put on a regular time grid.
//
// Contract:
// - A series file has a header naming its columns, in any order: `value`, a timestamp column
//   (`timestamp_anon` or `timestamp`, seconds, decimal) and an identity column (`container_ip`,
//   `pod`, `slice` or `series`). Both column orders of the bundled Alibaba GenAI files are
//   therefore read. Extra columns are ignored.
// - Every bad field is kInvalidArgument naming file, line and column (common/csv.h): a value or
//   timestamp that is not a finite number, a negative value, an empty identity, a duplicate
//   (identity, timestamp) pair, a file without rows.
// - The grid: step = the most common difference between consecutive distinct timestamps of the
//   file; t0 = the first timestamp. A timestamp more than a quarter step off the grid is an error.
//   Samples missing from a series (the pod was not running) are NaN: gaps are kept, never filled.
// - Series are ordered by identity (so results do not depend on row order).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::analyze {

inline constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();
inline bool Present(double v) { return !std::isnan(v); }

struct Series {
  std::string id;
  std::vector<double> values;  // one per grid slot; NaN where there is no sample
};

struct SeriesSet {
  std::string source;  // the file
  double t0 = 0;       // seconds, timestamp of slot 0
  double step = 0;     // seconds between slots
  size_t length = 0;   // slots in every series
  std::vector<Series> series;

  double TimeOf(size_t slot) const { return t0 + step * static_cast<double>(slot); }
  // The sum over series at each slot (missing samples count as 0); NaN where no series has one.
  std::vector<double> Aggregate() const;
  // Index of the series named `id`, or -1.
  int Find(const std::string& id) const;
};

Result<SeriesSet> ReadSeriesCsv(const std::string& path);
// The same from text; `source` names it in errors.
Result<SeriesSet> ParseSeriesCsv(std::string_view text, std::string source);

// Number of present samples.
size_t CountPresent(const std::vector<double>& v);

}  // namespace vgpu::analyze
