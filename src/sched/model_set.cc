#include "sched/model_set.h"

#include <algorithm>

namespace vgpu::sched {

Result<ModelId> ModelRegistry::Intern(std::string_view name) {
  if (auto id = Find(name)) return *id;
  if (name.empty()) return Status::InvalidArgument("GPU model name is empty");
  if (name.find('|') != std::string_view::npos) {
    return Status::InvalidArgument("GPU model name '" + std::string(name) + "' contains '|'");
  }
  if (names_.size() >= static_cast<size_t>(kMaxModels)) {
    return Status::ResourceExhausted("more than " + std::to_string(kMaxModels) +
                                     " distinct GPU models");
  }
  names_.emplace_back(name);
  return static_cast<ModelId>(names_.size() - 1);
}

std::optional<ModelId> ModelRegistry::Find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return static_cast<ModelId>(i);
  }
  return std::nullopt;
}

Result<ModelSet> ModelRegistry::ParseSet(std::string_view spec) const {
  ModelSet set;
  if (spec.empty()) return set;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t bar = spec.find('|', start);
    if (bar == std::string_view::npos) bar = spec.size();
    std::string_view name = spec.substr(start, bar - start);
    if (name.empty()) {
      return Status::InvalidArgument("empty GPU model name in \"" + std::string(spec) + "\"");
    }
    auto id = Find(name);
    if (!id) {
      std::string known;
      for (const std::string& n : names_) known += (known.empty() ? "" : ", ") + n;
      return Status::NotFound("unknown GPU model '" + std::string(name) +
                              "' (the node list has: " + (known.empty() ? "none" : known) + ")");
    }
    set.Add(*id);
    start = bar + 1;
  }
  return set;
}

std::string ModelRegistry::Format(ModelSet set) const {
  std::vector<std::string_view> names;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (((set.bits() >> i) & 1u) != 0) names.push_back(names_[i]);
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += '|';
    out += n;
  }
  return out;
}

}  // namespace vgpu::sched
