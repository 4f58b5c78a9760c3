// The GPU models `vgpu estimate` knows: those of src/hw's table marked for it
// (hw::GpuModel::estimate), in its order, with the memory the estimator checks a fit against
// (hw::GpuModel::EstimateMemoryMib) and their SM count; and the MIG profiles of those that have a
// MIG table (hw::GpuModel::mig_table).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::estimate {

struct GpuModel {
  std::string name;   // "h100-80gb": hw's key
  double memory = 0;  // bytes, the total cudaMemGetInfo reports
  int sms = 0;
  std::string mig_table;  // its MIG table's key (mig::ModelByKey), empty without one
};

struct MigProfile {
  std::string name;  // "3g.40gb"
  double memory = 0;
  int compute_slices = 0;  // of 7
};

std::span<const GpuModel> KnownGpus();
std::optional<GpuModel> FindGpu(std::string_view name);  // case-insensitive
// The largest memory of KnownGpus().
double LargestGpuMemory();

// The MIG profiles of `gpu`, smallest first; empty for a GPU without MIG.
std::vector<MigProfile> MigProfilesFor(const GpuModel& gpu);

}  // namespace vgpu::estimate
