// CsvTable: a CSV file with a header row, read whole into memory, with errors that name the file,
// line and column.
//
// Contract:
// - RFC 4180 fields: commas separate, double quotes enclose fields that hold commas, quotes
//   ("" inside quotes) or line breaks. CRLF and LF line ends are both accepted; blank lines are
//   skipped. A row with a different number of fields than the header is an error.
// - A UTF-8 byte-order mark at the start is skipped. Load refuses directories, devices and files
//   (or pipes) of more than kMaxFileBytes, each with kInvalidArgument.
// - Line numbers are the file's own, 1-based (the header is usually line 1).
// - Every error is kInvalidArgument (or kIoError for an unreadable file) with a message like
//   `pods.csv:17: column 'cpu_milli' (2): "abc" is not an integer`. Fields longer than 64 bytes
//   are cut in messages (common/quote.h), and so is a FieldError's text beyond 300 bytes.
// - Not thread-safe for writes; const methods may be called concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace vgpu {

class CsvTable {
 public:
  static constexpr uint64_t kMaxFileBytes = 1ULL << 30;  // 1 GiB

  // Reads and parses `path`.
  static Result<CsvTable> Load(const std::string& path);
  // Parses `text`; `source` names it in errors (a path, or "<stdin>").
  static Result<CsvTable> Parse(std::string_view text, std::string source);

  const std::string& source() const { return source_; }
  const std::vector<std::string>& header() const { return header_; }
  size_t num_rows() const { return rows_.size(); }

  // Index of the column named `name`, or -1.
  int FindColumn(std::string_view name) const;
  // Index of the column named `name`, or an error naming the file and the columns it has.
  Result<int> RequireColumn(std::string_view name) const;

  std::string_view Field(size_t row, int column) const { return rows_[row].fields[column]; }
  int LineOf(size_t row) const { return rows_[row].line; }

  // Typed access. Errors name file, line and column. Integers are decimal, optionally negative,
  // with no spaces; values outside [min, max] are rejected.
  Result<int64_t> GetInt(size_t row, int column, int64_t min = INT64_MIN,
                         int64_t max = INT64_MAX) const;
  // Like GetInt, but an empty field gives `if_empty`.
  Result<int64_t> GetIntOr(size_t row, int column, int64_t if_empty, int64_t min = INT64_MIN,
                           int64_t max = INT64_MAX) const;

  // "file:line: column 'name' (n): <what>", for callers that validate fields themselves.
  Status FieldError(size_t row, int column, std::string_view what) const;

 private:
  struct Row {
    int line = 0;
    std::vector<std::string> fields;
  };
  std::string source_;
  std::vector<std::string> header_;
  std::vector<Row> rows_;
};

}  // namespace vgpu
