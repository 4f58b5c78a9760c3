#include "sim/options.h"

#include <algorithm>
#include <charconv>

namespace vgpu::sim {
namespace {

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool ParseU64(std::string_view s, uint64_t* v) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

Result<std::vector<uint64_t>> ParseSeedList(std::string_view text) {
  const std::string shown(text);
  auto bad = [&](const std::string& why) -> Status {
    return Status::InvalidArgument("seeds \"" + shown + "\": " + why +
                                   " (use a range like 42-51 or a list like 42,43)");
  };
  if (Trim(text).empty()) return bad("empty");
  std::vector<uint64_t> seeds;
  for (std::string_view part : Split(text, ',')) {
    part = Trim(part);
    size_t dash = part.find('-');
    uint64_t lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!ParseU64(part, &lo)) return bad("\"" + std::string(part) + "\" is not a seed");
      hi = lo;
    } else if (!ParseU64(Trim(part.substr(0, dash)), &lo) ||
               !ParseU64(Trim(part.substr(dash + 1)), &hi)) {
      return bad("\"" + std::string(part) + "\" is not a range of seeds");
    }
    if (hi < lo) return bad("range " + std::string(part) + " runs backwards");
    if (hi - lo >= kMaxSeeds || seeds.size() + (hi - lo) >= kMaxSeeds) {
      return bad("more than " + std::to_string(kMaxSeeds) + " seeds");
    }
    for (uint64_t s = lo;; ++s) {
      if (std::find(seeds.begin(), seeds.end(), s) == seeds.end()) seeds.push_back(s);
      if (s == hi) break;
    }
  }
  return seeds;
}

Result<std::vector<std::string>> ParsePolicyList(std::string_view text,
                                                 const sched::PolicyRegistry& registry) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (std::string_view part : Split(text, ',')) {
    part = Trim(part);
    if (part.empty()) {
      return Status::InvalidArgument("policy list \"" + std::string(text) + "\" has an empty name");
    }
    if (part == "all") {
      // Every policy once: a policy that an alias stands for runs under the alias's name
      // (so `default` appears, and its target is not run twice).
      std::vector<std::string> alias_targets;
      for (const std::string& n : registry.Names()) {
        auto target = registry.Resolve(n);
        if (target && *target != n) alias_targets.push_back(*target);
      }
      for (const std::string& n : registry.Names()) {
        if (std::find(alias_targets.begin(), alias_targets.end(), n) == alias_targets.end()) {
          add(n);
        }
      }
      continue;
    }
    auto resolved = registry.Resolve(part);
    if (!resolved) return resolved.error();
    add(std::string(part));
  }
  return out;
}

Status ParsePolicyOption(std::string_view text,
                         std::map<std::string, std::map<std::string, std::string>>* out) {
  const size_t colon = text.find(':');
  const size_t eq = text.find('=', colon == std::string_view::npos ? 0 : colon);
  if (colon == std::string_view::npos || eq == std::string_view::npos || colon == 0 ||
      eq == colon + 1) {
    return Status::InvalidArgument("policy option \"" + std::string(text) +
                                   "\" is not of the form policy:key=value");
  }
  (*out)[std::string(text.substr(0, colon))][std::string(text.substr(colon + 1, eq - colon - 1))] =
      std::string(text.substr(eq + 1));
  return Status::Ok();
}

}  // namespace vgpu::sim
