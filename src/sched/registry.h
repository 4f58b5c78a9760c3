// PolicyRegistry: policy names -> factories. Factories validate their arguments.
//
// Contract:
// - Register() adds a policy; RegisterAlias() makes one name stand for another (the alias is
//   resolved when a policy is created). Names are unique across policies and aliases.
// - Create() builds a fresh Policy (plugins own their state, so each run or cluster needs its
//   own). Unknown names are kNotFound with the list of known names; bad arguments are
//   kInvalidArgument naming the policy and the argument.
// - BuiltinPolicies() holds every policy of src/sched; `default` is an alias for the project's
//   recommended policy.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "sched/framework.h"
#include "sched/model_set.h"
#include "sched/workload.h"

namespace vgpu::sched {

struct PolicyArgs {
  // FGD's target workload (e.g. TypicalWorkload of the pod list). Required by `fgd`.
  std::vector<WorkloadSpec> target_workload;
  // Model names, for ordering ties in learned workloads. Optional.
  const ModelRegistry* models = nullptr;
  // Policy-specific options, "key" -> "value"; each policy rejects keys it does not know.
  std::map<std::string, std::string> params;
};

// Fails with kInvalidArgument naming `policy` and the first key of `args.params` not in `known`.
Status CheckParams(std::string_view policy, const PolicyArgs& args,
                   std::initializer_list<std::string_view> known);
// Parses params[key] as a number in [min, max]; `fallback` when absent.
Result<double> GetNumberParam(std::string_view policy, const PolicyArgs& args, std::string_view key,
                              double fallback, double min, double max);

class PolicyRegistry {
 public:
  using Factory = std::function<Result<std::unique_ptr<Policy>>(const PolicyArgs&)>;

  Status Register(std::string name, std::string summary, Factory factory);
  Status RegisterAlias(std::string alias, std::string target);

  // The policy name `name` stands for (itself unless it is an alias).
  Result<std::string> Resolve(std::string_view name) const;
  Result<std::unique_ptr<Policy>> Create(std::string_view name, const PolicyArgs& args) const;
  // All names (policies and aliases) in registration order.
  const std::vector<std::string>& Names() const { return order_; }
  std::string Summary(std::string_view name) const;
  bool Contains(std::string_view name) const;

 private:
  struct Entry {
    std::string summary;
    Factory factory;     // empty for aliases
    std::string target;  // alias target
  };
  std::map<std::string, Entry, std::less<>> entries_;
  std::vector<std::string> order_;
};

// Registers every built-in policy into `registry`.
Status RegisterBuiltinPolicies(PolicyRegistry* registry);
// A registry with the built-in policies, built once.
const PolicyRegistry& BuiltinPolicies();

}  // namespace vgpu::sched
