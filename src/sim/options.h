// Parsing the simulator's list options: seeds ("42-51", "42,43,50", "7") and policies
// ("fgd,bestfit", "all"). Errors are kInvalidArgument / kNotFound with a message that names the
// bad value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "sched/registry.h"

namespace vgpu::sim {

inline constexpr size_t kMaxSeeds = 10000;

// Ranges and single seeds joined by ','; duplicates are kept once, in first-seen order.
Result<std::vector<uint64_t>> ParseSeedList(std::string_view text);
// Names joined by ','; "all" expands to every registered name (aliases included). Unknown names
// are kNotFound listing the known ones. Duplicates are kept once.
Result<std::vector<std::string>> ParsePolicyList(std::string_view text,
                                                 const sched::PolicyRegistry& registry);
// "policy:key=value" -> (*out)[policy][key] = value.
Status ParsePolicyOption(std::string_view text,
                         std::map<std::string, std::map<std::string, std::string>>* out);

}  // namespace vgpu::sim
