// MIG geometry as data: the GPU instance profiles of the MIG-capable GPUs vgpu knows, with their
// NVML profile ids, slices, SM counts, memory, engines, most instances and legal placements.
//
// Contract:
// - A GPU has 8 memory slices and 7 compute (SM) slices. A placement is a start memory slice; the
//   instance covers [start, start + memory_slices). Legal starts are a bit mask (bit s = start s),
//   as `nvidia-smi mig -lgipp` / nvmlDeviceGetGpuInstancePossiblePlacements_v2 list them.
// - The tables serve planning, the simulated GPU and tests. At run time what NVML reports (memory
//   size above all: it changes with the driver) wins over these figures.
// - Sources (docs/mig.md): NVIDIA's MIG user guide tables and `nvidia-smi mig -lgip/-lgipp`
//   output. The H200 placements are H100's, not yet read from H200 hardware
//   (ModelTable::placements_confirmed = false); H100-94GB and A100-80GB memory sizes are the
//   guide's nominal sizes, scaled, not captured output (memory_confirmed = false).
// - Profiles are listed in NVML profile-index order (1_SLICE, 1_SLICE_REV1 (+me), 1_SLICE_REV2,
//   2_SLICE, 3_SLICE, 4_SLICE, 7_SLICE); a profile's position in ModelTable::profiles is its
//   "profile index" used by the layout operations (src/mig/layout.h).
// - Lookups never fail loudly: they return nullptr for an unknown model or profile.
// Pure data and functions: no I/O, no allocation at lookup, usable from any process.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::mig {

inline constexpr int kMemorySlices = 8;
inline constexpr int kComputeSlices = 7;
inline constexpr int kMaxInstances = 7;

struct Engines {
  int copy = 0;
  int decoder = 0;
  int encoder = 0;
  int jpeg = 0;
  int ofa = 0;
};

struct Profile {
  std::string_view name;   // "1g.18gb", "1g.18gb+me"
  int profile_id = 0;      // NVML GPU instance profile id (nvidia-smi "ID"), e.g. 19
  int nvml_index = 0;      // NVML_GPU_INSTANCE_PROFILE_* index, e.g. 0x7 for 1_SLICE_REV1
  int memory_slices = 0;   // of kMemorySlices; also the placement size
  int compute_slices = 0;  // of kComputeSlices
  int sm_count = 0;        // multiprocessorCount
  int64_t memory_mib = 0;  // memorySizeMB (MiB)
  int max_count = 0;       // instanceCount: most instances of this profile on one GPU
  uint8_t start_mask = 0;  // legal placement starts, bit s = start s
  Engines engines;
  bool media_extensions = false;  // the "+me" variant (holds the OFA/media engines)

  bool LegalStart(int start) const {
    return start >= 0 && start < kMemorySlices && (start_mask >> start) & 1;
  }
  // The legal starts in increasing order.
  std::vector<int> Starts() const;
  // The memory slices [start, start + memory_slices) as a bit mask.
  uint8_t SliceMask(int start) const {
    return static_cast<uint8_t>(((1u << memory_slices) - 1u) << start);
  }
};

struct ModelTable {
  std::string_view key;      // "H200", "H100-80GB", "H100-94GB", "A100-40GB", "A100-80GB"
  std::string_view display;  // "NVIDIA H200 141GB"
  std::span<const std::string_view> nvml_names;  // names NVML reports for this model
  int sm_count = 0;                              // SMs of the whole GPU
  int64_t memory_mib = 0;                        // memory of the whole GPU
  std::span<const Profile> profiles;
  bool placements_confirmed = true;  // false: placements assumed, not read from this model
  bool memory_confirmed = true;      // false: memory sizes nominal, not read from this model

  // By NVIDIA's profile name ("3g.71gb", "1g.18gb+me"; NVIDIA's resource spelling "1g.18gb.me"
  // too), or nullptr.
  const Profile* Find(std::string_view name) const;
  // By NVML profile id, or nullptr.
  const Profile* FindById(int profile_id) const;
  // Position of `p` in profiles (p must belong to this table), or -1.
  int IndexOf(const Profile* p) const;
  // Position of the profile named `name`, or -1.
  int IndexOf(std::string_view name) const;
};

// Every known model, in a fixed order (A100-40GB, A100-80GB, H100-80GB, H100-94GB, H200).
std::span<const ModelTable> AllModels();
// By model key, case-insensitive ("H200", "h100-80gb"); "H100" alone means H100-80GB and "A100"
// alone A100-40GB. nullptr when unknown.
const ModelTable* ModelByKey(std::string_view key);
// By the device name NVML reports ("NVIDIA H200", "NVIDIA H100 80GB HBM3",
// "NVIDIA A100-SXM4-80GB", "NVIDIA H100 NVL", also without the "NVIDIA " prefix and the
// simulated GPU's "vgpu simulated H200 (140 GiB)"). nullptr when no table fits.
const ModelTable* ModelByNvmlName(std::string_view name);
// ModelByKey, else ModelByNvmlName.
const ModelTable* FindModel(std::string_view key_or_name);

// NVIDIA's device-plugin resource name of a profile (mixed strategy): "nvidia.com/mig-1g.18gb",
// "+me" spelled ".me" ("nvidia.com/mig-1g.18gb.me").
std::string ResourceNameOf(const Profile& p);
// The same for a profile name as NVML reports it ("1g.18gb+me" -> "nvidia.com/mig-1g.18gb.me").
std::string ResourceNameOfProfile(std::string_view profile);
inline constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";

}  // namespace vgpu::mig
