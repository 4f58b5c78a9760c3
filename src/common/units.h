// Parsing and formatting of sizes, percentages and durations, with strict errors.
//
// Byte sizes (ParseByteSize):
//   "4096"            plain bytes
//   "4k" "4m" "4g" "4t"  binary units, any case: KiB, MiB, GiB, TiB (HAMi-core's convention, so
//                        "4096m" means 4096 MiB)
//   "4Ki" "4KiB" ...  binary units, Kubernetes and IEC spelling
//   "4KB" "4MB" "4GB" "4TB"  decimal (SI) units: 10^3, 10^6, 10^9, 10^12 bytes
//   "1.5GiB"          a fraction is allowed with a unit; the result is rounded down to whole bytes
// Rejected: empty text, a sign ("-1", "+1"), spaces inside, unknown units ("4XB"), a fraction of a
// byte ("1.5"), and values above 2^64 - 1.
//
// Percentages (ParsePercent): "30" or "30%", an integer in [0, 100].
// Durations (ParseDuration): "5ms", "250us", "1s", "100ns", "2m" (minutes), "1h"; an integer and
// a unit.
// Rates (ParseRate): bytes per second, "10GB/s", "512MiB/s", "1.5GB/s"; the "/s" may be left out
// ("10GB"). Units as for byte sizes, except that a unit ending in a lowercase 'b' counts bits, as
// link speeds are written: "10Gb/s" is 10^10 bits = 1.25 GB/s, "100Mb/s" 12.5 MB/s, "8Kib/s"
// 1 KiB/s (rounded down to whole bytes).
//
// Header-only, exception-free, no allocation on success: usable inside the interception library.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace vgpu {

enum class ParseError {
  kNone,
  kEmpty,
  kSign,        // a leading '-' or '+'
  kNotANumber,  // no digits, or stray characters
  kBadUnit,     // unknown unit suffix
  kFraction,    // a fraction where only whole units are allowed
  kOverflow,    // does not fit in 64 bits
  kOutOfRange,  // a number outside the accepted range (percent above 100)
};

constexpr std::string_view ParseErrorText(ParseError e) {
  switch (e) {
    case ParseError::kNone:
      return "ok";
    case ParseError::kEmpty:
      return "empty value";
    case ParseError::kSign:
      return "signs are not allowed";
    case ParseError::kNotANumber:
      return "not a number";
    case ParseError::kBadUnit:
      return "unknown unit";
    case ParseError::kFraction:
      return "fractions are not allowed here";
    case ParseError::kOverflow:
      return "value too large";
    case ParseError::kOutOfRange:
      return "value out of range";
  }
  return "error";
}

template <typename T>
struct Parsed {
  T value{};
  ParseError error = ParseError::kNone;
  constexpr bool ok() const { return error == ParseError::kNone; }
};

namespace units_internal {

// string_view::substr without its out_of_range throw (positions here never exceed the size), so
// that these parsers stay usable in code built without exceptions.
constexpr std::string_view Sub(std::string_view s, size_t pos, size_t n = std::string_view::npos) {
  if (pos > s.size()) pos = s.size();
  if (n > s.size() - pos) n = s.size() - pos;
  return std::string_view(s.data() + pos, n);
}

constexpr char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

constexpr bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

// Multiplier of a byte-size unit, or 0 if the unit is unknown.
constexpr uint64_t ByteUnit(std::string_view u) {
  struct Unit {
    std::string_view name;
    uint64_t factor;
  };
  constexpr Unit kUnits[] = {
      {"", 1},
      {"b", 1},
      {"k", 1ULL << 10},
      {"ki", 1ULL << 10},
      {"kib", 1ULL << 10},
      {"m", 1ULL << 20},
      {"mi", 1ULL << 20},
      {"mib", 1ULL << 20},
      {"g", 1ULL << 30},
      {"gi", 1ULL << 30},
      {"gib", 1ULL << 30},
      {"t", 1ULL << 40},
      {"ti", 1ULL << 40},
      {"tib", 1ULL << 40},
      {"kb", 1000ULL},
      {"mb", 1000ULL * 1000},
      {"gb", 1000ULL * 1000 * 1000},
      {"tb", 1000ULL * 1000 * 1000 * 1000},
  };
  for (const Unit& unit : kUnits) {
    if (EqualsIgnoreCase(u, unit.name)) return unit.factor;
  }
  return 0;
}

// Splits "123.45unit" into whole digits, fraction digits and unit. Returns an error for a sign,
// no digits, or stray characters.
struct NumberParts {
  std::string_view whole;
  std::string_view fraction;  // digits after '.', empty if none
  bool has_point = false;
  std::string_view unit;
};

constexpr ParseError SplitNumber(std::string_view text, NumberParts* out) {
  if (text.empty()) return ParseError::kEmpty;
  if (text[0] == '-' || text[0] == '+') return ParseError::kSign;
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  out->whole = Sub(text, 0, i);
  if (i < text.size() && text[i] == '.') {
    out->has_point = true;
    size_t start = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    out->fraction = Sub(text, start, i - start);
  }
  if (out->whole.empty() && out->fraction.empty()) return ParseError::kNotANumber;
  if (out->has_point && out->fraction.empty()) return ParseError::kNotANumber;
  out->unit = Sub(text, i);
  for (char c : out->unit) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '%')) {
      return ParseError::kNotANumber;
    }
  }
  return ParseError::kNone;
}

// Parses a run of decimal digits into a 64-bit value; kOverflow above 2^64 - 1.
constexpr ParseError ParseDigits(std::string_view digits, uint64_t* out) {
  unsigned __int128 v = 0;
  for (char c : digits) {
    v = v * 10 + static_cast<unsigned>(c - '0');
    if (v > UINT64_MAX) return ParseError::kOverflow;
  }
  *out = static_cast<uint64_t>(v);
  return ParseError::kNone;
}

}  // namespace units_internal

// Parses a byte size; see the file comment for the accepted forms.
constexpr Parsed<uint64_t> ParseByteSizeRaw(std::string_view text) {
  using namespace units_internal;
  NumberParts parts;
  if (ParseError e = SplitNumber(text, &parts); e != ParseError::kNone) return {0, e};
  uint64_t unit = ByteUnit(parts.unit);
  if (unit == 0) return {0, ParseError::kBadUnit};
  if (parts.has_point && unit == 1) return {0, ParseError::kFraction};
  uint64_t whole = 0;
  if (ParseError e = ParseDigits(parts.whole, &whole); e != ParseError::kNone) return {0, e};
  unsigned __int128 total = static_cast<unsigned __int128>(whole) * unit;
  if (!parts.fraction.empty()) {
    // fraction digits beyond 18 cannot change the result by a whole byte for units <= 2^40... but
    // they could for huge units; cap the digits we look at and keep exact integer arithmetic.
    std::string_view f = Sub(parts.fraction, 0, 18);
    uint64_t numerator = 0;
    uint64_t denominator = 1;
    for (char c : f) {
      numerator = numerator * 10 + static_cast<unsigned>(c - '0');
      denominator *= 10;
    }
    total += static_cast<unsigned __int128>(numerator) * unit / denominator;
  }
  if (total > UINT64_MAX) return {0, ParseError::kOverflow};
  return {static_cast<uint64_t>(total), ParseError::kNone};
}

// Parses an integer percentage in [0, 100], with or without a trailing '%'.
constexpr Parsed<int> ParsePercentRaw(std::string_view text) {
  using namespace units_internal;
  NumberParts parts;
  if (ParseError e = SplitNumber(text, &parts); e != ParseError::kNone) return {0, e};
  if (!(parts.unit.empty() || parts.unit == "%")) return {0, ParseError::kBadUnit};
  if (parts.has_point) return {0, ParseError::kFraction};
  uint64_t v = 0;
  if (ParseError e = ParseDigits(parts.whole, &v); e != ParseError::kNone) return {0, e};
  if (v > 100) return {0, ParseError::kOutOfRange};
  return {static_cast<int>(v), ParseError::kNone};
}

// Parses a non-negative integer with no unit ("42"); rejects signs, fractions and overflow.
constexpr Parsed<uint64_t> ParseUnsignedRaw(std::string_view text) {
  using namespace units_internal;
  NumberParts parts;
  if (ParseError e = SplitNumber(text, &parts); e != ParseError::kNone) return {0, e};
  if (!parts.unit.empty()) return {0, ParseError::kNotANumber};
  if (parts.has_point) return {0, ParseError::kFraction};
  uint64_t v = 0;
  if (ParseError e = ParseDigits(parts.whole, &v); e != ParseError::kNone) return {0, e};
  return {v, ParseError::kNone};
}

// Parses a duration into nanoseconds: an integer followed by ns, us, ms, s or m.
constexpr Parsed<int64_t> ParseDurationRaw(std::string_view text) {
  using namespace units_internal;
  NumberParts parts;
  if (ParseError e = SplitNumber(text, &parts); e != ParseError::kNone) return {0, e};
  if (parts.has_point) return {0, ParseError::kFraction};
  int64_t unit = 0;
  if (parts.unit == "ns")
    unit = 1;
  else if (parts.unit == "us")
    unit = 1000;
  else if (parts.unit == "ms")
    unit = 1000 * 1000;
  else if (parts.unit == "s")
    unit = 1000LL * 1000 * 1000;
  else if (parts.unit == "m")
    unit = 60LL * 1000 * 1000 * 1000;
  else if (parts.unit == "h")
    unit = 3600LL * 1000 * 1000 * 1000;
  else
    return {0, ParseError::kBadUnit};
  uint64_t v = 0;
  if (ParseError e = ParseDigits(parts.whole, &v); e != ParseError::kNone) return {0, e};
  if (v > static_cast<uint64_t>(INT64_MAX / unit)) return {0, ParseError::kOverflow};
  return {static_cast<int64_t>(v) * unit, ParseError::kNone};
}

// Parses a rate in bytes per second: a byte size, optionally followed by "/s"; a unit ending in
// a lowercase 'b' is in bits ("10Gb/s").
constexpr Parsed<uint64_t> ParseRateRaw(std::string_view text) {
  using namespace units_internal;
  if (text.size() >= 2 && text[text.size() - 2] == '/' && Lower(text[text.size() - 1]) == 's') {
    text = Sub(text, 0, text.size() - 2);
  }
  Parsed<uint64_t> bytes = ParseByteSizeRaw(text);
  if (!bytes.ok() || text.empty() || text[text.size() - 1] != 'b') return bytes;
  return {bytes.value / 8, ParseError::kNone};  // bits
}

// Status-returning forms for callers outside the interception library. `what` names the input
// in the message, e.g. "--memory": `--memory: "4XB": unknown unit (use B, KiB, MiB, GiB, ...)`.
Result<uint64_t> ParseByteSize(std::string_view text, std::string_view what = "size");
Result<int> ParsePercent(std::string_view text, std::string_view what = "percentage");
Result<uint64_t> ParseUnsigned(std::string_view text, std::string_view what = "number");
Result<int64_t> ParseDuration(std::string_view text, std::string_view what = "duration");
Result<uint64_t> ParseRate(std::string_view text, std::string_view what = "rate");

// Formats a byte count for people: "512 B", "4.00 KiB", "80.00 GiB".
std::string FormatBytes(uint64_t bytes);

// `v` with `decimals` digits after the point, as printf's "%.*f" writes it: "3.14" for
// (3.14159, 2), "7" for (7.2, 0), "-0.50" for (-0.5, 2).
std::string FormatFixed(double v, int decimals);

}  // namespace vgpu
