#include "node/modes/mig_tenant.h"

#include <set>

namespace vgpu::node {

std::string MigInstanceUuid(const std::vector<device::MigInstance>& instances, uint32_t gi,
                            uint32_t ci) {
  const device::MigInstance* found = nullptr;
  int matches = 0;
  for (const device::MigInstance& m : instances) {
    if (m.uuid.empty() || m.gi_id != static_cast<int>(gi)) continue;
    if (ci != device::HealthEvent::kNoInstance && m.ci_id != static_cast<int>(ci)) continue;
    found = &m;
    ++matches;
  }
  return matches == 1 ? found->uuid : "";
}

std::optional<std::string> OnlyTenantOfMigInstance(const std::vector<SliceRecord>& slices,
                                                   const std::vector<MigClaim>* claims,
                                                   const std::string& mig_uuid, std::string* why) {
  if (mig_uuid.empty()) {
    *why = "the instance is not known";
    return std::nullopt;
  }
  if (claims != nullptr) {
    for (const MigClaim& c : *claims) {
      if (c.uuid == mig_uuid && c.pods.size() != 1) {
        *why = std::to_string(c.pods.size()) + " pods share the instance";
        return std::nullopt;
      }
    }
  }
  std::set<std::string> tenants;
  for (const SliceRecord& r : slices) {
    for (const SliceDevice& d : r.spec.devices) {
      if (d.uuid == mig_uuid) tenants.insert(r.name);
    }
  }
  if (tenants.size() != 1) {
    *why = tenants.empty() ? "no tenant uses the instance"
                           : std::to_string(tenants.size()) + " tenants share the instance";
    return std::nullopt;
  }
  return *tenants.begin();
}

}  // namespace vgpu::node
