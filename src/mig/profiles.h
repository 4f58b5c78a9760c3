// MIG geometry as data: the GPU instance profiles of the MIG-capable GPUs vgpu has documented
// figures for, with their NVML profile ids, slices, SM counts, memory, engines, most instances and
// legal placements, and the exact identification of a GPU's model.
//
// Contract:
// - A GPU has ModelTable::memory_slices memory slices (8; 4 on A30) and compute_slices compute
//   slices (7; 4 on A30). A placement is a start memory slice; the instance covers
//   [start, start + memory_slices). Legal starts are a bit mask (bit s = start s), as
//   `nvidia-smi mig -lgipp` / nvmlDeviceGetGpuInstancePossiblePlacements_v2 list them.
// - Every figure comes from published `nvidia-smi mig -lgip` output of that model (the sources are
//   named beside each table in profiles_tables.cc and in docs/mig.md). memory_mib is memorySizeMB
//   as NVML reports it; where outputs from several drivers differ, the smallest, so a pod is never
//   promised more memory than its instance has. A model whose sizes are not all documented has no
//   table (UntabledModels says why) and so no MIG offers: never a neighbour's table.
// - Identification is exact (IdentifyModel): the NVML name (or the simulated GPU's name) equal to
//   one of the table's model's, and the GPU's total memory within kMemoryTolerance of the model's;
//   a PCI device id, when known, must be one of the model's. Anything else gets no table and a
//   reason. The model's names, PCI ids, memory and SMs are src/hw's table of GPU models
//   (hw/gpu_models.h); a table refers to its model (ModelTable::gpu), whose mig_table is its key.
// - The tables serve planning, the extender, DRA offers, the simulated GPU and tests. On a GPU,
//   what NVML reports (DeviceBackend::MigProfiles) wins over these figures.
// - Profiles are listed in NVML profile-index order (1_SLICE, 1_SLICE_REV1 (+me), 1_SLICE_REV2,
//   2_SLICE, 3_SLICE, 4_SLICE, 7_SLICE); a profile's position in ModelTable::profiles is its
//   "profile index" used by the layout operations (src/mig/layout.h).
// Pure data and functions: no I/O, usable from any process.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "hw/gpu_models.h"

namespace vgpu::mig {

inline constexpr int kMemorySlices = 8;  // the most memory slices of any model
inline constexpr int kComputeSlices = 7;
inline constexpr int kMaxInstances = 7;
// Total memory may differ from the table's by this fraction (ECC, driver reservations) and
// still identify the model; models of one name family differ by 15% or more (80/94/96 GB).
inline constexpr double kMemoryTolerance = 0.03;

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
  int memory_slices = 0;   // of ModelTable::memory_slices; also the placement size
  int compute_slices = 0;  // of ModelTable::compute_slices
  int sm_count = 0;        // multiprocessorCount
  int64_t memory_mib = 0;  // memorySizeMB (MiB)
  int max_count = 0;       // instanceCount: most instances of this profile on one GPU
  uint8_t start_mask = 0;  // legal placement starts, bit s = start s
  Engines engines;
  bool media_extensions = false;  // a "+me" variant (holds the OFA/media engines)

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
  std::string_view key;  // "H200", "H100-80GB", "H100-PCIe", "A30", ... (gpu->mig_table)
  // The GPU model (src/hw): display name, NVML names, the simulated GPU's preset name, PCI device
  // ids, SMs and total memory. nullptr for an OwnedTable (a GPU's reported profiles).
  const hw::GpuModel* gpu = nullptr;
  int memory_slices = kMemorySlices;
  int compute_slices = kComputeSlices;
  int max_instances = kMaxInstances;
  std::span<const Profile> profiles;
  bool placements_confirmed = true;  // false: placements assumed, not read from this model
  std::string_view source;           // where the figures come from (one line)

  // By NVIDIA's profile name ("3g.71gb", "1g.18gb+me"; NVIDIA's resource spelling "1g.18gb.me"
  // too), or nullptr.
  const Profile* Find(std::string_view name) const;
  // By NVML profile id, or nullptr.
  const Profile* FindById(int profile_id) const;
  // Position of `p` in profiles (p must belong to this table), or -1.
  int IndexOf(const Profile* p) const;
  // Position of the profile named `name`, or -1.
  int IndexOf(std::string_view name) const;
  // The engines of the whole-GPU profile (the most any layout can use), or all zero when the
  // table has no profile over every memory slice.
  Engines EngineBudget() const;
  // The positions of the profiles without media extensions that hold at least `memory_mib`,
  // smallest first: by memory, then by the memory and compute slices they take, ties in table
  // order. The first is the smallest fitting profile (HAMi's choice too); empty when none fits.
  std::vector<int> Fitting(int64_t memory_mib) const;
};

// Every model with a table, in a fixed order (A30, A100-40GB, A100-80GB, H100-80GB, H100-PCIe,
// H100-NVL, H200, GH200-96GB).
std::span<const ModelTable> AllModels();

// A MIG-capable model vgpu has no table for, and why (the documented figures it lacks).
struct UntabledModel {
  const hw::GpuModel* gpu = nullptr;  // display ("NVIDIA B200"), NVML names, PCI ids (some)
  std::string_view why;
};
std::span<const UntabledModel> UntabledModels();

// What identifies a GPU's model.
struct GpuIdentity {
  std::string_view name;       // nvmlDeviceGetName (or the simulated GPU's name)
  int64_t memory_mib = 0;      // total memory (nvmlDeviceGetMemoryInfo), MiB; 0 = unknown
  uint32_t pci_device_id = 0;  // nvmlPciInfo_t.pciDeviceId; 0 = unknown
};

struct ModelMatch {
  const ModelTable* table = nullptr;
  std::string why;  // when table is null: why no table fits, naming the GPU
};

// The table of exactly this GPU model (see the contract), or none with the reason. An unknown
// memory size identifies nothing.
ModelMatch IdentifyModel(const GpuIdentity& gpu);

// By model key, case-insensitive ("H200", "h100-80gb"), exact: no shorthand. nullptr if unknown.
const ModelTable* ModelByKey(std::string_view key);
// What a user typed (`vgpu mig profiles --model`): a model key, or an exact NVML or simulated
// name of one table. kNotFound with one clear message otherwise (for a MIG-capable model vgpu
// has no table for, the reason; else the known keys).
Result<const ModelTable*> LookupModel(std::string_view key_or_name);
// The known keys, comma separated ("A30, A100-40GB, ...").
std::string ModelKeys();

// A table built at run time from what a GPU's NVML reports (names, ids, slices, SMs, memory,
// counts, starts and engines): the layout and choice operations then work on the driver's own
// geometry.
struct ReportedProfile {
  int profile_id = 0;
  std::string name;
  int memory_slices = 0;
  int compute_slices = 0;
  int sm_count = 0;
  int64_t memory_mib = 0;
  int max_count = 0;
  std::vector<int> starts;
  Engines engines;  // all zero when the driver does not say
};
class OwnedTable {
 public:
  explicit OwnedTable(std::vector<ReportedProfile> profiles);
  OwnedTable(const OwnedTable&) = delete;
  OwnedTable& operator=(const OwnedTable&) = delete;
  const ModelTable& table() const { return table_; }

 private:
  std::vector<std::string> names_;
  std::vector<Profile> profiles_;
  ModelTable table_;
};

// NVIDIA's device-plugin resource name of a profile (mixed strategy): "nvidia.com/mig-1g.18gb",
// "+me" spelled ".me" ("nvidia.com/mig-1g.18gb.me").
std::string ResourceNameOf(const Profile& p);
// The same for a profile name as NVML reports it ("1g.18gb+me" -> "nvidia.com/mig-1g.18gb.me").
std::string ResourceNameOfProfile(std::string_view profile);
inline constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";

}  // namespace vgpu::mig
