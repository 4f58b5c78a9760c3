// Scripted scenarios for the tuning rules, as long-format signal series (rules.h): what the node
// daemon would export for a GPU during 30 minutes at a 30 s interval, with a behaviour that
// starts at minute 10 (kOnsetS). Deterministic (seeded noise).
//
// - copy_hog:  gpu0/web (guaranteed inference, util ~45%) and gpu0/batch (best effort) whose
//              copies rise from 1 to 20 GB/s at the onset; web's gate wait rises to ~0.35.
// - leak:      gpu0/trainer's memory grows by 1 GiB/h from the onset (otherwise flat, +-2 MiB).
// - xid_burst: gpu0 reports 3 XID errors per interval from the onset.
// - idle:      gpu0/notebook stops launching at the onset and keeps its 8 GiB.
// - quiet:     the copy_hog tenants without the hog, nothing else happening.
// Each names the rule of deploy/analyze/rules.yaml it is meant to fire ("" for quiet).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::analyze {

inline constexpr double kOnsetS = 600;
inline constexpr double kScenarioIntervalS = 30;

struct Scenario {
  std::string name;
  std::string intended_rule;  // "" = nothing may fire
  std::string csv;            // timestamp,target,signal,value
};

std::vector<std::string> ScenarioNames();
Result<Scenario> MakeScenario(const std::string& name);

}  // namespace vgpu::analyze
