#include "estimate/gpus.h"

#include <algorithm>
#include <cctype>

#include "estimate/formulas.h"

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

// A placeholder until the MIG profile tables of src/mig/ exist: the memory of each profile as
// `nvidia-smi mig -lgip` lists it (MiB), rounded.
std::vector<MigProfile> MigProfilesFor(const GpuModel& gpu) {
  auto p = [](const char* name, double mib, int slices) {
    return MigProfile{name, mib * kMiB, slices};
  };
  if (gpu.name == "a100-40gb") {
    return {p("1g.5gb", 4864, 1), p("2g.10gb", 9984, 2), p("3g.20gb", 19968, 3),
            p("4g.20gb", 19968, 4), p("7g.40gb", 40192, 7)};
  }
  if (gpu.name == "a100-80gb" || gpu.name == "h100-80gb") {
    return {p("1g.10gb", 9984, 1),  p("1g.20gb", 19968, 1), p("2g.20gb", 19968, 2),
            p("3g.40gb", 40192, 3), p("4g.40gb", 40192, 4), p("7g.80gb", 80384, 7)};
  }
  if (gpu.name == "h200") {
    return {p("1g.18gb", 18176, 1), p("1g.35gb", 35456, 1), p("2g.35gb", 35456, 2),
            p("3g.71gb", 71936, 3), p("4g.71gb", 71936, 4), p("7g.141gb", 143104, 7)};
  }
  return {};
}

}  // namespace vgpu::estimate
