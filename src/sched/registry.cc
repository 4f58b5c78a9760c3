#include "sched/registry.h"

#include <charconv>

#include "sched/policies.h"

namespace vgpu::sched {

Status CheckParams(std::string_view policy, const PolicyArgs& args,
                   std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : args.params) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || k == key;
    if (ok) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return Status::InvalidArgument(
        "policy '" + std::string(policy) + "' has no option '" + key + "'" +
        (list.empty() ? " (it takes none)" : " (it takes: " + list + ")"));
  }
  return Status::Ok();
}

Result<double> GetNumberParam(std::string_view policy, const PolicyArgs& args, std::string_view key,
                              double fallback, double min, double max) {
  auto it = args.params.find(std::string(key));
  if (it == args.params.end()) return fallback;
  const std::string& v = it->second;
  double d = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || d < min || d > max) {
    return Status::InvalidArgument("policy '" + std::string(policy) + "': option '" +
                                   std::string(key) + "' must be a number in [" +
                                   std::to_string(min) + ", " + std::to_string(max) + "], got \"" +
                                   v + "\"");
  }
  return d;
}

Status PolicyRegistry::Register(std::string name, std::string summary, Factory factory) {
  if (name.empty() || !factory) return Status::InvalidArgument("policy needs a name and a factory");
  if (entries_.count(name) != 0) {
    return Status::AlreadyExists("policy '" + name + "' is already registered");
  }
  order_.push_back(name);
  entries_.emplace(std::move(name), Entry{std::move(summary), std::move(factory), ""});
  return Status::Ok();
}

Status PolicyRegistry::RegisterAlias(std::string alias, std::string target) {
  if (entries_.count(alias) != 0) {
    return Status::AlreadyExists("policy '" + alias + "' is already registered");
  }
  auto it = entries_.find(target);
  if (it == entries_.end() || !it->second.factory) {
    return Status::NotFound("alias '" + alias + "' names unknown policy '" + target + "'");
  }
  order_.push_back(alias);
  std::string summary = "alias for " + target + ": " + it->second.summary;
  entries_.emplace(std::move(alias), Entry{std::move(summary), nullptr, std::move(target)});
  return Status::Ok();
}

bool PolicyRegistry::Contains(std::string_view name) const {
  return entries_.find(name) != entries_.end();
}

Result<std::string> PolicyRegistry::Resolve(std::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string known;
    for (const std::string& n : order_) known += (known.empty() ? "" : ", ") + n;
    return Status::NotFound("unknown policy '" + std::string(name) + "' (known: " + known + ")");
  }
  return it->second.factory ? it->first : it->second.target;
}

Result<std::unique_ptr<Policy>> PolicyRegistry::Create(std::string_view name,
                                                       const PolicyArgs& args) const {
  auto resolved = Resolve(name);
  if (!resolved) return resolved.error();
  return entries_.find(*resolved)->second.factory(args);
}

std::string PolicyRegistry::Summary(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? "" : it->second.summary;
}

Status RegisterBuiltinPolicies(PolicyRegistry* r) {
  VGPU_RETURN_IF_ERROR(r->Register("random", "a random feasible node", MakeRandomPolicy));
  VGPU_RETURN_IF_ERROR(r->Register("dotprod", "Tetris dot product of free and requested CPU/GPU",
                                   MakeDotProdPolicy));
  VGPU_RETURN_IF_ERROR(
      r->Register("clustering", "keep pods of one GPU class together", MakeClusteringPolicy));
  VGPU_RETURN_IF_ERROR(r->Register("packing", "fill used GPUs, then used nodes, then idle nodes",
                                   MakePackingPolicy));
  VGPU_RETURN_IF_ERROR(r->Register("bestfit", "least CPU and GPU left over", MakeBestFitPolicy));
  VGPU_RETURN_IF_ERROR(
      r->Register("fgd", "fragmentation gradient descent, workload known ahead", MakeFgdPolicy));
  VGPU_RETURN_IF_ERROR(r->Register("fgd-online", "FGD with the workload learned as pods arrive",
                                   MakeFgdOnlinePolicy));
  VGPU_RETURN_IF_ERROR(
      r->Register("hami-binpack", "HAMi node binpack + GPU binpack", MakeHamiBinpackPolicy));
  VGPU_RETURN_IF_ERROR(
      r->Register("hami-spread", "HAMi node spread + GPU spread", MakeHamiSpreadPolicy));
  VGPU_RETURN_IF_ERROR(r->Register(
      "cafgd", "CPU-aware fragmentation gradient descent, workload learned as pods arrive",
      MakeCafgdPolicy));
  // The project's recommended policy.
  VGPU_RETURN_IF_ERROR(r->RegisterAlias("default", "cafgd"));
  return Status::Ok();
}

const PolicyRegistry& BuiltinPolicies() {
  static const PolicyRegistry* registry = [] {
    auto* r = new PolicyRegistry();
    Status s = RegisterBuiltinPolicies(r);
    (void)s;  // built-in names are distinct; a failure here is a programming error caught by tests
    return r;
  }();
  return *registry;
}

}  // namespace vgpu::sched
