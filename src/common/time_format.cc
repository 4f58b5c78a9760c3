#include "common/time_format.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace vgpu {

std::string FormatUtcSeconds(double epoch_seconds) {
  char buf[64];
  // Years 0000-9999: -62167219200 .. 253402300799 seconds.
  if (!std::isfinite(epoch_seconds) || epoch_seconds < -62167219200.0 ||
      epoch_seconds > 253402300799.0) {
    std::snprintf(buf, sizeof buf, "%.0f", epoch_seconds);
    return buf;
  }
  const std::time_t t = static_cast<std::time_t>(std::llround(epoch_seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

}  // namespace vgpu
