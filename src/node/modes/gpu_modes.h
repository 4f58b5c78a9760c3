// GPU modes: which GPUs of the node run software slices, whole, MIG (static or on demand) or MPS,
// read from the node's configuration file (`vgpu node --gpu-modes FILE`, `vgpu mig apply`).
//
// The file is YAML in the style of NVIDIA's mig-parted (docs/mig.md, "The node"):
//
//   version: v1
//   gpus:
//     - devices: all            # "all" or a list of NVML indices
//       mode: shared            # shared | whole | mig | mig-dynamic | mps
//     - devices: [1]
//       model: H200             # optional: only GPUs whose MIG table is this model
//       mode: mig
//       mig-devices:            # mode mig only: how many instances of each profile
//         "1g.18gb": 2
//         "3g.71gb": 1
//
// The first entry that matches a GPU decides its mode; a GPU no entry matches is `shared` (the
// daemon's behaviour without the file). Errors are kInvalidArgument naming the file, the entry
// and the key (what is wrong and where): also a `model` that is not a MIG table key. A file is
// checked against the node's GPUs before anything is applied (CheckGpuModeDevices): an index
// that names no GPU of the node is an error at its file:line, so a typo never silently turns
// the node's GPUs to `shared`. Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "k8s/wire/gpu_inventory.h"

namespace vgpu::node {

// The inventory contract's modes and spelling (k8s/gpu_inventory.h).
using GpuMode = k8s::GpuMode;
using k8s::GpuModeName;

struct GpuModeEntry {
  std::vector<int> devices;                // empty: all
  std::vector<std::string> devices_where;  // per device: "FILE:LINE:COLUMN" of its index
  std::string model;                       // empty: any
  GpuMode mode = GpuMode::kShared;
  std::vector<std::pair<std::string, int>> mig_devices;  // profile name, count (in file order)
};

struct GpuModeConfig {
  std::vector<GpuModeEntry> entries;
};

Result<GpuModeConfig> ParseGpuModeConfig(std::string_view yaml, const std::string& file);
Result<GpuModeConfig> LoadGpuModeConfig(const std::string& path);

// kInvalidArgument naming the first device index of `config` that is not one of `present` (the
// node's NVML indices), at its file:line:column, with the indices the node has.
Status CheckGpuModeDevices(const GpuModeConfig& config, const std::vector<int>& present);

// The entry that decides GPU `index` (whose MIG table key is `model_key`, "" if none), or null
// (shared).
const GpuModeEntry* EntryFor(const GpuModeConfig& config, int index, std::string_view model_key);

}  // namespace vgpu::node
