#include "estimate/gpus.h"

#include <algorithm>
#include <cctype>

#include "estimate/formulas.h"
#include "mig/profiles.h"

namespace vgpu::estimate {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Total memory as nvidia-smi / cudaMemGetInfo report it (MiB), SMs from NVIDIA's data sheets.
const std::vector<GpuModel>& Table() {
  static const std::vector<GpuModel> kGpus = {
      {"t4", 15360 * kMiB, 40},         {"a10g", 23028 * kMiB, 80},
      {"l4", 23034 * kMiB, 58},         {"rtx-4090", 24564 * kMiB, 128},
      {"v100-32gb", 32768 * kMiB, 80},  {"a100-40gb", 40960 * kMiB, 108},
      {"l40s", 46068 * kMiB, 142},      {"a6000", 49140 * kMiB, 84},
      {"a100-80gb", 81920 * kMiB, 108}, {"h100-80gb", 81559 * kMiB, 132},
      {"h200", 143771 * kMiB, 132},
  };
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
  const mig::ModelTable* table = mig::ModelByKey(gpu.name);
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
