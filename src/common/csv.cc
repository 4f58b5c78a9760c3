#include "common/csv.h"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/quote.h"

namespace vgpu {
namespace {

// Reads one record starting at text[*pos]; advances *pos past its line end and *line past the
// lines it spans. Returns an error for an unterminated quote or a stray quote.
Status ReadRecord(std::string_view text, size_t* pos, int* line, const std::string& source,
                  std::vector<std::string>* fields) {
  fields->clear();
  std::string field;
  size_t i = *pos;
  const int start_line = *line;
  bool in_quotes = false;
  bool was_quoted = false;
  while (i < text.size()) {
    char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          i += 2;
          continue;
        }
        in_quotes = false;
        ++i;
        continue;
      }
      if (c == '\n') ++*line;
      field += c;
      ++i;
      continue;
    }
    if (c == '"') {
      if (!field.empty() || was_quoted) {
        return Status::InvalidArgument(source + ":" + std::to_string(*line) +
                                       ": stray quote inside field " +
                                       std::to_string(fields->size() + 1));
      }
      in_quotes = true;
      was_quoted = true;
      ++i;
      continue;
    }
    if (c == ',') {
      fields->push_back(std::move(field));
      field.clear();
      was_quoted = false;
      ++i;
      continue;
    }
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (c == '\n') {
      ++i;
      break;
    }
    if (was_quoted) {
      return Status::InvalidArgument(source + ":" + std::to_string(*line) +
                                     ": text after closing quote in field " +
                                     std::to_string(fields->size() + 1));
    }
    field += c;
    ++i;
  }
  if (in_quotes) {
    return Status::InvalidArgument(source + ":" + std::to_string(start_line) +
                                   ": quoted field is never closed");
  }
  fields->push_back(std::move(field));
  *pos = i;
  ++*line;
  return Status::Ok();
}

bool IsBlank(const std::vector<std::string>& fields) {
  return fields.size() == 1 && fields[0].find_first_not_of(" \t\r") == std::string::npos;
}

}  // namespace

Result<CsvTable> CsvTable::Load(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return Status::IoError(path + ": cannot open: " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode))
    return Status::InvalidArgument(path + ": is a directory, not a CSV file");
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    return Status::InvalidArgument(path + ": is a device, not a CSV file");
  }
  const std::string too_large = path + ": larger than " + std::to_string(kMaxFileBytes >> 20) +
                                " MiB, the most a CSV file may hold";
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    return Status::InvalidArgument(too_large);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::IoError(path + ": cannot open: " + std::strerror(errno));
  }
  // Read in chunks up to the limit: a pipe (or a file that grows) has no size to check first.
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) return Status::InvalidArgument(too_large);
  }
  if (in.bad()) return Status::IoError(path + ": read failed");
  return Parse(text, path);
}

Result<CsvTable> CsvTable::Parse(std::string_view text, std::string source) {
  CsvTable table;
  table.source_ = std::move(source);
  size_t pos = 0;
  int line = 1;
  // A UTF-8 byte-order mark (spreadsheet exports write one) is not part of the first column name.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") pos = 3;
  std::vector<std::string> fields;
  // Header: the first non-blank record.
  while (pos < text.size()) {
    VGPU_RETURN_IF_ERROR(ReadRecord(text, &pos, &line, table.source_, &fields));
    if (!IsBlank(fields)) break;
    fields.clear();
  }
  if (fields.empty() || IsBlank(fields)) {
    return Status::InvalidArgument(table.source_ + ": empty file (expected a header line)");
  }
  table.header_ = fields;
  for (size_t c = 0; c < table.header_.size(); ++c) {
    if (table.header_[c].empty()) {
      return Status::InvalidArgument(table.source_ + ":1: column " + std::to_string(c + 1) +
                                     " of the header has no name");
    }
  }
  while (pos < text.size()) {
    int record_line = line;
    VGPU_RETURN_IF_ERROR(ReadRecord(text, &pos, &line, table.source_, &fields));
    if (IsBlank(fields)) continue;
    if (fields.size() != table.header_.size()) {
      return Status::InvalidArgument(table.source_ + ":" + std::to_string(record_line) +
                                     ": expected " + std::to_string(table.header_.size()) +
                                     " fields as in the header, found " +
                                     std::to_string(fields.size()));
    }
    table.rows_.push_back(Row{record_line, fields});
  }
  return table;
}

int CsvTable::FindColumn(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

Result<int> CsvTable::RequireColumn(std::string_view name) const {
  int c = FindColumn(name);
  if (c >= 0) return c;
  std::string have;
  for (const std::string& h : header_) {
    if (!have.empty()) have += ",";
    have += h;
  }
  return Status::InvalidArgument(source_ + ":1: missing column '" + std::string(name) +
                                 "' (header has: " + Shorten(have, 200) + ")");
}

Status CsvTable::FieldError(size_t row, int column, std::string_view what) const {
  return Status::InvalidArgument(source_ + ":" + std::to_string(rows_[row].line) + ": column '" +
                                 Shorten(header_[column], kQuoteMax) + "' (" +
                                 std::to_string(column + 1) + "): " + Shorten(what, 300));
}

Result<int64_t> CsvTable::GetInt(size_t row, int column, int64_t min, int64_t max) const {
  std::string_view f = Field(row, column);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (f.empty()) return FieldError(row, column, "empty, expected an integer");
  if (ec == std::errc::result_out_of_range) {
    return FieldError(row, column, Quote(f) + " is too large");
  }
  if (ec != std::errc() || ptr != f.data() + f.size()) {
    return FieldError(row, column, Quote(f) + " is not an integer");
  }
  if (v < min || v > max) {
    std::string range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
    if (v < 0 && min >= 0) {
      return FieldError(row, column, Quote(f) + " is negative");
    }
    return FieldError(row, column, Quote(f) + " is outside " + range);
  }
  return v;
}

Result<int64_t> CsvTable::GetIntOr(size_t row, int column, int64_t if_empty, int64_t min,
                                   int64_t max) const {
  if (Field(row, column).empty()) return if_empty;
  return GetInt(row, column, min, max);
}

}  // namespace vgpu
