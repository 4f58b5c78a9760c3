#include "k8s/api/quantity.h"

#include <cmath>
#include <limits>

namespace vgpu::k8s {
namespace {

Status BadQuantity(std::string_view text, const char* why) {
  return Status::InvalidArgument("'" + std::string(text) + "' " + why);
}

// A quantity as sign * mantissa * 10^exp10 * 2^exp2.
struct Parts {
  bool negative = false;
  __int128 mantissa = 0;
  int exp10 = 0;
  int exp2 = 0;
};

Result<Parts> ParseParts(std::string_view text) {
  std::string_view s = text;
  if (s.empty()) return BadQuantity(text, "is not a quantity");
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  // Mantissa as an integer of up to 30 digits plus the count of fractional digits.
  __int128 mantissa = 0;
  int frac_digits = 0;
  int digits = 0;
  bool dot = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && !dot) {
      dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    if (++digits > 30) return BadQuantity(text, "has too many digits");
    mantissa = mantissa * 10 + (c - '0');
    if (dot) ++frac_digits;
  }
  if (digits == 0) return BadQuantity(text, "is not a quantity");
  std::string_view suffix = s.substr(i);
  int exp10 = -frac_digits;
  int exp2 = 0;
  if (suffix.empty()) {
  } else if (suffix == "Ki") {
    exp2 = 10;
  } else if (suffix == "Mi") {
    exp2 = 20;
  } else if (suffix == "Gi") {
    exp2 = 30;
  } else if (suffix == "Ti") {
    exp2 = 40;
  } else if (suffix == "Pi") {
    exp2 = 50;
  } else if (suffix == "Ei") {
    exp2 = 60;
  } else if (suffix == "n") {
    exp10 -= 9;
  } else if (suffix == "u") {
    exp10 -= 6;
  } else if (suffix == "m") {
    exp10 -= 3;
  } else if (suffix == "k") {
    exp10 += 3;
  } else if (suffix == "M") {
    exp10 += 6;
  } else if (suffix == "G") {
    exp10 += 9;
  } else if (suffix == "T") {
    exp10 += 12;
  } else if (suffix == "P") {
    exp10 += 15;
  } else if (suffix == "E") {
    exp10 += 18;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view e = suffix.substr(1);
    bool eneg = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      eneg = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 3) return BadQuantity(text, "has a bad exponent");
    int v = 0;
    for (char c : e) {
      if (c < '0' || c > '9') return BadQuantity(text, "has a bad exponent");
      v = v * 10 + (c - '0');
    }
    exp10 += eneg ? -v : v;
  } else {
    return BadQuantity(text, "has an unknown suffix");
  }
  return Parts{negative, mantissa, exp10, exp2};
}

}  // namespace

Result<int64_t> ParseWholeQuantity(std::string_view text) {
  auto parts = ParseParts(text);
  if (!parts) return parts.error();
  auto [negative, mantissa, exp10, exp2] = *parts;
  constexpr __int128 kMax = std::numeric_limits<int64_t>::max();
  for (; exp10 < 0; ++exp10) {
    if (mantissa % 10 != 0) return BadQuantity(text, "is not a whole number");
    mantissa /= 10;
  }
  for (; exp10 > 0; --exp10) {
    mantissa *= 10;
    if (mantissa > kMax) return BadQuantity(text, "is too large");
  }
  for (; exp2 > 0; --exp2) {
    mantissa *= 2;
    if (mantissa > kMax) return BadQuantity(text, "is too large");
  }
  if (mantissa > kMax) return BadQuantity(text, "is too large");
  return static_cast<int64_t>(negative ? -mantissa : mantissa);
}

Result<int64_t> ParseCeilQuantity(std::string_view text, int scale10) {
  auto parts = ParseParts(text);
  if (!parts) return parts.error();
  auto [negative, mantissa, exp10, exp2] = *parts;
  if (negative && mantissa != 0) return BadQuantity(text, "is negative");
  constexpr __int128 kMax = std::numeric_limits<int64_t>::max();
  exp10 += scale10;
  for (; exp2 > 0; --exp2) {
    mantissa *= 2;
    if (mantissa > kMax) return BadQuantity(text, "is too large");
  }
  for (; exp10 > 0; --exp10) {
    mantissa *= 10;
    if (mantissa > kMax) return BadQuantity(text, "is too large");
  }
  bool remainder = false;
  for (; exp10 < 0; ++exp10) {
    remainder = remainder || mantissa % 10 != 0;
    mantissa /= 10;
  }
  if (remainder) ++mantissa;
  if (mantissa > kMax) return BadQuantity(text, "is too large");
  return static_cast<int64_t>(mantissa);
}

Result<int64_t> CeilQuantityOf(const Json& value, int scale10) {
  if (value.is_string()) return ParseCeilQuantity(value.get_ref<const std::string&>(), scale10);
  if (value.is_number()) return ParseCeilQuantity(value.dump(), scale10);
  if (value.is_structured()) {
    return Status::InvalidArgument(std::string("an ") + value.type_name() + " is not a quantity");
  }
  return Status::InvalidArgument("'" + value.dump() + "' is not a quantity");
}

Result<int64_t> WholeQuantityOf(const Json& value) {
  if (value.is_string()) return ParseWholeQuantity(value.get_ref<const std::string&>());
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::floor(d) != d || std::fabs(d) > 9e18) {
      return Status::InvalidArgument("'" + value.dump() + "' is not a whole number");
    }
    return static_cast<int64_t>(d);
  }
  if (value.is_structured()) {
    return Status::InvalidArgument(std::string("an ") + value.type_name() + " is not a quantity");
  }
  return Status::InvalidArgument("'" + value.dump() + "' is not a quantity");
}

}  // namespace vgpu::k8s
