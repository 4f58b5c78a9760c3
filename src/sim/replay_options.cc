#include "sim/replay_options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace vgpu::sim {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// A plain decimal number: digits, optionally one '.' and more digits. No sign, no exponent.
bool ParseDecimal(std::string_view s, double* v) {
  if (s.empty() || s.front() == '.' || s.back() == '.') return false;
  int dots = 0;
  for (char c : s) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  if (dots > 1) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(*v);
}

}  // namespace

Result<int64_t> ParseTimeSpan(std::string_view text) {
  const std::string shown(text);
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("time span \"" + shown + "\": " + why +
                                   " (use a number and a unit s, m, h, d or w, e.g. 30d or 12h)");
  };
  std::string_view s = Trim(text);
  if (s.empty()) return bad("empty");
  double unit = 1;  // a bare number is seconds
  const char last = s.back();
  if (last < '0' || last > '9') {
    switch (last) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      case 'w':
        unit = 7 * 86400;
        break;
      default:
        return bad("unknown unit");
    }
    s.remove_suffix(1);
  }
  double v = 0;
  if (!ParseDecimal(s, &v)) return bad("not a number");
  const double us = v * unit * 1e6;
  if (!(us >= 1)) return bad("must be positive");
  if (us > 100.0 * 365 * 86400 * 1e6) return bad("longer than 100 years");
  return static_cast<int64_t>(std::llround(us));
}

std::string FormatTimeSpan(double seconds) {
  char buf[48];
  const double a = std::fabs(seconds);
  if (a < 60) {
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  } else if (a < 3600) {
    std::snprintf(buf, sizeof buf, "%.1f m", seconds / 60);
  } else if (a < 86400) {
    std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f d", seconds / 86400);
  }
  return buf;
}

Result<std::vector<double>> ParseNumberList(std::string_view text, double min, double max) {
  const std::string shown(text);
  std::vector<double> out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(',', start);
    std::string_view part =
        Trim(text.substr(start, end == std::string_view::npos ? end : end - start));
    double v = 0;
    if (!ParseDecimal(part, &v)) {
      return Status::InvalidArgument("\"" + shown + "\": \"" + std::string(part) +
                                     "\" is not a number");
    }
    if (v < min || v > max) {
      char range[96];
      std::snprintf(range, sizeof range, "%g..%g", min, max);
      return Status::InvalidArgument("\"" + shown + "\": " + std::string(part) + " is outside " +
                                     range);
    }
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace vgpu::sim
