// Parsing the replay's options: time spans ("30d", "12h", "90m", "45s", "3600", "1.5d") and lists
// of positive numbers ("50,100,200"). Errors are kInvalidArgument with a message that names the
// bad value; callers add the flag.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace vgpu::sim {

// A time span in microseconds: a number (fractions allowed) with a unit s, m (minutes), h, d or w;
// a bare number is seconds. Must be > 0 and at most 100 years.
Result<int64_t> ParseTimeSpan(std::string_view text);

// "3.2 d", "5.0 h", "12 m", "40 s": a readable span for tables.
std::string FormatTimeSpan(double seconds);

// Numbers joined by ','; each must be in [min, max] (finite). Duplicates are kept once, in the
// order first seen.
Result<std::vector<double>> ParseNumberList(std::string_view text, double min, double max);

}  // namespace vgpu::sim
