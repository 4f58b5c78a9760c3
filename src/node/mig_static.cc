#include "node/mig_static.h"

#include <algorithm>
#include <functional>

namespace vgpu::node {
namespace {

// Spelling NVIDIA's device plugin uses in resource names ("1g.18gb.me") is accepted too.
bool SameProfile(const std::string& a, const std::string& b) {
  auto norm = [](std::string s) {
    std::replace(s.begin(), s.end(), '+', '.');
    return s;
  };
  return norm(a) == norm(b);
}

std::string Describe(const std::vector<std::pair<std::string, int>>& counts) {
  std::string out;
  for (const auto& [name, n] : counts) {
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + "x " + name;
  }
  return out;
}

}  // namespace

Result<std::vector<MigPlacement>> PlanStaticLayout(
    const std::vector<device::MigProfileInfo>& profiles,
    const std::vector<std::pair<std::string, int>>& counts) {
  std::vector<const device::MigProfileInfo*> wanted;
  for (const auto& [name, n] : counts) {
    const device::MigProfileInfo* p = nullptr;
    for (const device::MigProfileInfo& q : profiles) {
      if (SameProfile(q.name, name)) p = &q;
    }
    if (p == nullptr) {
      std::string known;
      for (const device::MigProfileInfo& q : profiles) known += (known.empty() ? "" : " ") + q.name;
      return Status::InvalidArgument("this GPU has no MIG profile \"" + name +
                                     "\" (it has: " + known + ")");
    }
    if (n > p->max_count) {
      return Status::InvalidArgument(std::to_string(n) + "x " + p->name +
                                     ": this GPU holds at most " + std::to_string(p->max_count));
    }
    for (int i = 0; i < n; ++i) wanted.push_back(p);
  }
  std::stable_sort(wanted.begin(), wanted.end(), [](auto* a, auto* b) {
    return a->memory_slices != b->memory_slices ? a->memory_slices > b->memory_slices
                                                : a->starts.size() < b->starts.size();
  });
  std::vector<MigPlacement> out;
  uint32_t occupied = 0;
  std::function<bool(size_t)> place = [&](size_t i) {
    if (i == wanted.size()) return true;
    const device::MigProfileInfo& p = *wanted[i];
    for (int start : p.starts) {
      uint32_t mask = ((1u << p.memory_slices) - 1u) << start;
      if (occupied & mask) continue;
      // Same-profile instances in increasing start order: no permutation is tried twice.
      if (!out.empty() && out.back().profile_id == p.profile_id && start < out.back().start)
        continue;
      occupied |= mask;
      out.push_back({p.profile_id, p.name, start, p.memory_slices});
      if (place(i + 1)) return true;
      out.pop_back();
      occupied &= ~mask;
    }
    return false;
  };
  if (!place(0)) {
    return Status::InvalidArgument("no placement holds " + Describe(counts) +
                                   " on this GPU (8 memory slices)");
  }
  std::sort(out.begin(), out.end(),
            [](const MigPlacement& a, const MigPlacement& b) { return a.start < b.start; });
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
  Result<std::vector<MigPlacement>> plan = PlanStaticLayout(*profiles, counts);
  if (!plan) return plan.error().WithContext(gpu);
  Result<std::vector<device::MigInstance>> have = backend->MigInstances(index);
  if (!have) return have.error().WithContext(gpu);
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
