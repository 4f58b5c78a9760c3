#include "node/modes/mig_static.h"

#include <algorithm>

#include "mig/choice.h"

namespace vgpu::node {
namespace {

// Spelling NVIDIA's device plugin uses in resource names ("1g.18gb.me") is accepted too.
bool SameProfileName(const std::string& a, const std::string& b) {
  auto norm = [](std::string s) {
    std::replace(s.begin(), s.end(), '+', '.');
    return s;
  };
  return norm(a) == norm(b);
}

std::string DescribeCounts(const std::vector<std::pair<std::string, int>>& counts) {
  std::string out;
  for (const auto& [name, n] : counts) {
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + "x " + name;
  }
  return out;
}

// The GPU's instances as the plan, when they are complete and exactly `counts`; else empty.
std::vector<MigPlacement> KeptLayout(const std::vector<device::MigInstance>& have,
                                     const std::vector<std::pair<std::string, int>>& counts) {
  std::vector<MigPlacement> out;
  int wanted = 0;
  for (const auto& [name, n] : counts) {
    int found = 0;
    for (const device::MigInstance& m : have) found += SameProfileName(m.profile, name) ? 1 : 0;
    if (found != n) return {};
    wanted += n;
  }
  if (static_cast<int>(have.size()) != wanted) return {};
  for (const device::MigInstance& m : have) {
    if (m.ci_id < 0) return {};
    out.push_back({m.profile_id, m.profile, m.start, m.size});
  }
  return out;
}

}  // namespace

Result<std::vector<MigPlacement>> PlanStaticLayout(
    const std::vector<device::MigProfileInfo>& profiles,
    const std::vector<std::pair<std::string, int>>& counts) {
  std::vector<mig::ReportedProfile> reported;
  for (const device::MigProfileInfo& p : profiles) {
    reported.push_back({p.profile_id,
                        p.name,
                        p.memory_slices,
                        p.compute_slices,
                        p.sm_count,
                        static_cast<int64_t>(p.memory_bytes >> 20),
                        p.max_count,
                        p.starts,
                        {p.copy_engines, p.decoders, p.encoders, p.jpegs, p.ofas}});
  }
  const mig::OwnedTable owned(std::move(reported));
  const mig::ModelTable& table = owned.table();
  std::vector<int> wanted;
  for (const auto& [name, n] : counts) {
    int q = -1;
    for (size_t i = 0; i < profiles.size(); ++i) {
      if (SameProfileName(profiles[i].name, name)) q = static_cast<int>(i);
    }
    if (q < 0) {
      std::string known;
      for (const device::MigProfileInfo& p : profiles) known += (known.empty() ? "" : " ") + p.name;
      return Status::InvalidArgument("this GPU has no MIG profile \"" + name +
                                     "\" (it has: " + known + ")");
    }
    if (n > profiles[q].max_count) {
      return Status::InvalidArgument(std::to_string(n) + "x " + profiles[q].name +
                                     ": this GPU holds at most " +
                                     std::to_string(profiles[q].max_count));
    }
    for (int i = 0; i < n; ++i) wanted.push_back(q);
  }
  // The search `vgpu mig plan` and the extender use (mig::PlanAdds): of every placement that
  // holds them all, the one that keeps the most room for what could come next.
  const mig::Plan plan = mig::PlanAdds(mig::Layout{&table, {}}, wanted);
  if (!plan.all_fit) {
    return Status::InvalidArgument("no placement holds " + DescribeCounts(counts) +
                                   " on this GPU (" + std::to_string(table.memory_slices) +
                                   " memory slices)");
  }
  std::vector<MigPlacement> out;
  for (const mig::Instance& inst : plan.result.instances) {
    const device::MigProfileInfo& p = profiles[inst.profile];
    out.push_back({p.profile_id, p.name, inst.start, p.memory_slices});
  }
  return out;
}

Result<MigApplyReport> ApplyStaticLayout(device::DeviceBackend* backend, int index,
                                         const std::vector<std::pair<std::string, int>>& counts,
                                         bool idle) {
  MigApplyReport report;
  const std::string gpu = "GPU " + std::to_string(index);
  Result<device::MigModeState> mode = backend->GetMigMode(index);
  if (!mode) return mode.error().WithContext(gpu);
  if (!mode->current) {
    if (!idle) {
      return Status::FailedPrecondition(gpu + " is in use: MIG is enabled only on an idle GPU");
    }
    Status enabled = backend->SetMigMode(index, true);
    if (!enabled.ok()) return enabled.WithContext(gpu + ": enabling MIG");
    report.steps.push_back("enabled MIG");
  }
  Result<std::vector<device::MigProfileInfo>> profiles = backend->MigProfiles(index);
  if (!profiles) return profiles.error().WithContext(gpu);
  Result<std::vector<device::MigInstance>> have = backend->MigInstances(index);
  if (!have) return have.error().WithContext(gpu);
  // Instances that already are exactly the requested ones stay where they are: placing them
  // anew would change nothing but their UUIDs.
  Result<std::vector<MigPlacement>> plan = KeptLayout(*have, counts);
  if (plan->empty()) plan = PlanStaticLayout(*profiles, counts);
  if (!plan) return plan.error().WithContext(gpu);
  auto in_plan = [&](const device::MigInstance& m) {
    for (const MigPlacement& p : *plan) {
      if (p.profile_id == m.profile_id && p.start == m.start && m.ci_id >= 0) return true;
    }
    return false;
  };
  auto exists = [&](const MigPlacement& p) {
    for (const device::MigInstance& m : *have) {
      if (p.profile_id == m.profile_id && p.start == m.start && m.ci_id >= 0) return true;
    }
    return false;
  };
  bool changes = std::any_of(have->begin(), have->end(), [&](auto& m) { return !in_plan(m); }) ||
                 std::any_of(plan->begin(), plan->end(), [&](auto& p) { return !exists(p); });
  if (changes && !idle) {
    return Status::FailedPrecondition(gpu + " is in use: its MIG layout changes only when idle");
  }
  for (const device::MigInstance& m : *have) {
    if (in_plan(m)) continue;
    Status s = backend->DestroyMigInstance(index, m.gi_id);
    if (!s.ok())
      return s.WithContext(gpu + ": destroying " + m.profile + "@" + std::to_string(m.start));
    report.steps.push_back("destroyed " + m.profile + "@" + std::to_string(m.start));
  }
  for (const MigPlacement& p : *plan) {
    if (exists(p)) continue;
    Result<device::MigInstance> made = backend->CreateMigInstance(index, p.profile_id, p.start);
    if (!made) return made.error().WithContext(gpu);
    report.steps.push_back("created " + p.profile + "@" + std::to_string(p.start) + " " +
                           made->uuid);
  }
  Result<std::vector<device::MigInstance>> after = backend->MigInstances(index);
  if (!after) return after.error().WithContext(gpu);
  report.instances = std::move(*after);
  return report;
}

}  // namespace vgpu::node
