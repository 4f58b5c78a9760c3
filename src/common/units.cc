#include "common/units.h"

#include <cstdio>

#include "common/quote.h"

namespace vgpu {
namespace {

Status MakeError(std::string_view what, std::string_view text, ParseError e,
                 std::string_view hint) {
  std::string m(what);
  m += ": ";
  m += Quote(text);
  m += ": ";
  m += ParseErrorText(e);
  if (!hint.empty()) {
    m += " (";
    m += hint;
    m += ")";
  }
  return Status::InvalidArgument(std::move(m));
}

}  // namespace

Result<uint64_t> ParseByteSize(std::string_view text, std::string_view what) {
  Parsed<uint64_t> p = ParseByteSizeRaw(text);
  if (!p.ok()) {
    return MakeError(what, text, p.error,
                     "expected bytes or a size such as 4096m, 512MiB, 4GiB, 4g");
  }
  return p.value;
}

Result<int> ParsePercent(std::string_view text, std::string_view what) {
  Parsed<int> p = ParsePercentRaw(text);
  if (!p.ok()) return MakeError(what, text, p.error, "expected an integer 0-100, e.g. 30 or 30%");
  return p.value;
}

Result<uint64_t> ParseUnsigned(std::string_view text, std::string_view what) {
  Parsed<uint64_t> p = ParseUnsignedRaw(text);
  if (!p.ok()) return MakeError(what, text, p.error, "expected a non-negative integer");
  return p.value;
}

Result<int64_t> ParseDuration(std::string_view text, std::string_view what) {
  Parsed<int64_t> p = ParseDurationRaw(text);
  if (!p.ok()) return MakeError(what, text, p.error, "expected e.g. 5ms, 250us, 1s, 1h");
  return p.value;
}

Result<uint64_t> ParseRate(std::string_view text, std::string_view what) {
  Parsed<uint64_t> p = ParseRateRaw(text);
  if (!p.ok())
    return MakeError(what, text, p.error, "expected e.g. 10GB/s, 512MiB/s, or 10Gb/s in bits");
  return p.value;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kNames[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1024.0 && unit < 5) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f %s", v, kNames[unit]);
  return buf;
}

std::string FormatFixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace vgpu
