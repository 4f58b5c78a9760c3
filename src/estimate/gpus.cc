#include "estimate/gpus.h"

#include <algorithm>
#include <cctype>

#include "estimate/formulas.h"
#include "hw/gpu_models.h"
#include "mig/profiles.h"

namespace vgpu::estimate {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// hw's models marked for the estimator (the figures and their sources: hw/gpu_models_table.h).
const std::vector<GpuModel>& Table() {
  static const std::vector<GpuModel> kGpus = [] {
    std::vector<GpuModel> out;
    for (const hw::GpuModel& g : hw::AllGpuModels()) {
      if (!g.estimate) continue;
      out.push_back({std::string(g.key), static_cast<double>(g.EstimateMemoryMib()) * kMiB,
                     g.sm_count, std::string(g.mig_table)});
    }
    return out;
  }();
  return kGpus;
}

}  // namespace

std::span<const GpuModel> KnownGpus() { return Table(); }

std::optional<GpuModel> FindGpu(std::string_view name) {
  const std::string want = Lower(name);
  for (const GpuModel& g : Table()) {
    if (g.name == want) return g;
  }
  return std::nullopt;
}

double LargestGpuMemory() {
  double largest = 0;
  for (const GpuModel& g : Table()) largest = std::max(largest, g.memory);
  return largest;
}

// The MIG profiles of src/mig/profiles.h for the GPU, smallest memory first (then fewest compute
// slices; the "+me" variants, same memory, after their plain profile).
std::vector<MigProfile> MigProfilesFor(const GpuModel& gpu) {
  std::vector<MigProfile> out;
  const mig::ModelTable* table = gpu.mig_table.empty() ? nullptr : mig::ModelByKey(gpu.mig_table);
  if (table == nullptr) return out;
  std::vector<const mig::Profile*> profiles;
  for (const mig::Profile& p : table->profiles) profiles.push_back(&p);
  std::stable_sort(profiles.begin(), profiles.end(),
                   [](const mig::Profile* a, const mig::Profile* b) {
                     if (a->memory_mib != b->memory_mib) return a->memory_mib < b->memory_mib;
                     if (a->compute_slices != b->compute_slices)
                       return a->compute_slices < b->compute_slices;
                     return !a->media_extensions && b->media_extensions;
                   });
  for (const mig::Profile* p : profiles) {
    out.push_back(
        MigProfile{std::string(p->name), double(p->memory_mib) * kMiB, p->compute_slices});
  }
  return out;
}

}  // namespace vgpu::estimate
