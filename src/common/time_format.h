// Times for people and logs: ISO 8601 in UTC ("2022-09-11T01:12:00Z").
//
// FormatUtcSeconds() takes seconds since the Unix epoch (a series' timestamp column), rounds to
// the nearest second and writes YYYY-MM-DDTHH:MM:SSZ; a value that is not finite or outside
// years 0000-9999 is written as the plain number instead, so nothing is lost. Pure: no clock.
#pragma once

#include <string>

namespace vgpu {

std::string FormatUtcSeconds(double epoch_seconds);

}  // namespace vgpu
