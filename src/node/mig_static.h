// Static MIG layouts (mode `mig`): profile counts from the GPU mode file turned into placements,
// and applied to an idle GPU.
//
// PlanStaticLayout works on the profiles the driver reports (DeviceBackend::MigProfiles), not on
// a table: names, legal starts and sizes are NVML's. It searches (depth first, larger profiles
// first, each at its lowest free legal start) for placements of every requested instance: the
// state space is tiny (at most 7 instances, 8 starts). Errors: kInvalidArgument naming a profile
// this GPU lacks, a count above its most instances, or the request when no placement of all of
// it exists.
//
// ApplyStaticLayout makes the GPU's instances exactly the plan: a mode change and destroys happen
// only on an idle GPU (`idle` false: kFailedPrecondition, nothing changed); instances already
// matching the plan (profile and start) are kept. It reports every step taken.
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
