// Static MIG layouts (mode `mig`): profile counts from the GPU mode file turned into placements,
// and applied to an idle GPU.
//
// PlanStaticLayout works on the profiles the driver reports (DeviceBackend::MigProfiles), not on
// a table: names, legal starts, counts and sizes are NVML's (a mig::OwnedTable of them). It
// places every requested instance with the search `vgpu mig plan` and the extender use
// (mig::PlanAdds): of all placements that hold them together, the one that keeps the most room
// (the largest profile still placeable, then the chance the next profile fits), so 3g.71gb: 1,
// 1g.18gb: 2 on an H200 goes to 1g@0, 1g@1, 3g@4 (a 2g.35gb still fits at 2), not 3g@0, 1g@4,
// 1g@5. Errors: kInvalidArgument naming a profile this GPU lacks, a count above its most
// instances, or the request when no placement of all of it exists.
//
// ApplyStaticLayout makes the GPU's instances exactly the plan: a mode change and destroys happen
// only on an idle GPU (`idle` false: kFailedPrecondition, nothing changed). Instances that already
// are exactly the requested counts are kept where they are (no new plan); otherwise instances
// already matching the plan (profile and start) are kept. It reports every step taken.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "device/device_backend.h"

namespace vgpu::node {

struct MigPlacement {
  int profile_id = 0;
  std::string profile;
  int start = 0;
  int size = 0;
};

Result<std::vector<MigPlacement>> PlanStaticLayout(
    const std::vector<device::MigProfileInfo>& profiles,
    const std::vector<std::pair<std::string, int>>& counts);

struct MigApplyReport {
  std::vector<std::string> steps;  // "enabled MIG", "destroyed 1g.18gb@6", "created 3g.71gb@0"
  std::vector<device::MigInstance> instances;  // the GPU's instances afterwards
};

Result<MigApplyReport> ApplyStaticLayout(device::DeviceBackend* backend, int index,
                                         const std::vector<std::pair<std::string, int>>& counts,
                                         bool idle);

}  // namespace vgpu::node
