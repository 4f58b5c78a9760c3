// The node's GPU inventory as published on the Node object by the node daemon, and read by the
// scheduler extender. The contract between the two (documented in docs/scheduler.md):
//
//   annotation vgpu.io/gpu-inventory = JSON
//   {"version": 1,
//    "gpus": [{"uuid": "GPU-8c1f...", "index": 0, "model": "NVIDIA A100-SXM4-80GB",
//              "memory_mib": 81920, "units": 10, "health": "healthy", "numa": 0,
//              "nvlink_peers": ["GPU-2b7e..."]}, ...]}
//
// - uuid: NVML UUID, unique on the node. index: NVML index, unique, 0..63. model: NVML name.
// - memory_mib: memory the scheduler may hand out (after any scaling), > 0.
// - units: shareable units advertised to kubelet for this GPU (1..1000); also the most pods that
//   may share it.
// - health: "healthy" or "unhealthy". numa: NUMA node, -1 unknown. nvlink_peers: UUIDs of GPUs on
//   the same node reachable over NVLink (optional).
// - mode (optional, absent = "shared"): how the GPU is shared: "shared" (software slices),
//   "whole" (one pod at a time), "mig" (a static MIG layout), "mig-dynamic" (MIG instances created
//   for each pod) or "mps" (an MPS server; one fault domain, only pods that allow it).
// - mig (optional, only on "mig" and "mig-dynamic" GPUs): the GPU instances that exist now,
//   [{"profile": "3g.71gb", "start": 0, "uuid": "MIG-...", "profile_id": 9}]; start is the first
//   memory slice (0..7), profile_id the NVML profile id (optional). When the model has a MIG table
//   (src/mig/profiles.h; identified exactly by model and memory_mib) the profiles must be its own
//   and the layout legal (no overlap, max counts, legal starts).
//   the same node reachable over NVLink (optional). links (optional, written when the node knows
//   its topology): this GPU's row of the `nvidia-smi topo -m` matrix, one token per GPU in index
//   order ("X" for itself, "NV18", "PIX", "PXB", "PHB", "NODE", "SYS"); the extender's topology
//   (k8s/placement_topology.h) uses it when every GPU has one.
// - pcie (optional, top level, written when the driver tells it): {"generation": 4, "width": 16},
//   the PCIe link of the node's slowest GPU (nvmlDeviceGetMaxPcieLinkGeneration/Width); it
//   scales the PCIe figures of the extender's bandwidth model (absent: Gen4 x16).
// - Unknown fields are ignored (later minor additions); another "version" is refused.
// - The publisher writes the annotation only when its content changes; FormatInventory gives a
//   canonical text (GPUs by index, fixed key order) so equal inventories compare equal as text.
//
// HAMi's hami.io/node-nvidia-register (JSON array of {id, index, count, devmem, devcore, type,
// numa, health, mode}, or the legacy "uuid,count,mem,cores,type,numa,health[,index,mode]:" text)
// is parsed too, for clusters migrating from HAMi. Its "type" drops the "NVIDIA-" prefix HAMi adds.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s/api/kube_client.h"
#include "mig/profiles.h"

namespace vgpu::k8s {

inline constexpr const char* kInventoryAnnotation = "vgpu.io/gpu-inventory";
inline constexpr const char* kHamiRegisterAnnotation = "hami.io/node-nvidia-register";
inline constexpr int kInventoryVersion = 1;

enum class GpuMode { kShared, kWhole, kMig, kMigDynamic, kMps };

// "shared", "whole", "mig", "mig-dynamic", "mps".
std::string_view GpuModeName(GpuMode mode);
// The mode named `name`, or std::nullopt.
std::optional<GpuMode> ParseGpuMode(std::string_view name);

// A MIG GPU instance that exists on a GPU.
struct InventoryMigInstance {
  std::string profile;  // NVIDIA's profile name, "1g.18gb"
  int start = 0;        // first memory slice
  std::string uuid;     // "MIG-..."
  int profile_id = -1;  // NVML profile id, -1 when not given
  friend bool operator==(const InventoryMigInstance&, const InventoryMigInstance&) = default;
};

struct InventoryGpu {
  std::string uuid;
  int index = 0;
  std::string model;
  int64_t memory_mib = 0;
  int units = 10;
  bool healthy = true;
  int numa = -1;
  std::vector<std::string> nvlink_peers;
  GpuMode mode = GpuMode::kShared;
  std::vector<InventoryMigInstance> mig = {};  // sorted by start
  friend bool operator==(const InventoryGpu&, const InventoryGpu&) = default;
};

enum class InventorySource { kVgpu, kHami };

struct NodeInventory {
  std::vector<InventoryGpu> gpus;  // sorted by index
  InventorySource source = InventorySource::kVgpu;
  std::map<int, std::vector<std::string>> links;  // by GPU index: the optional `links` rows
  int pcie_generation = 0;                        // the optional `pcie`; 0: not given
  int pcie_width = 0;
  friend bool operator==(const NodeInventory&, const NodeInventory&) = default;
};

// The MIG table of exactly this GPU's model (its NVML name and memory_mib, mig::IdentifyModel),
// or none with the reason: the extender's MIG choice and checks use no other table.
mig::ModelMatch MigModelOf(const InventoryGpu& g);

// Canonical JSON text of `inv` (source is not written).
std::string FormatInventory(const NodeInventory& inv);
// Parses and validates vgpu.io/gpu-inventory. Errors (kInvalidArgument) name the field, e.g.
// "gpus[2].memory_mib: must be a positive integer".
Result<NodeInventory> ParseInventory(std::string_view text);
// Parses hami.io/node-nvidia-register (JSON or legacy text).
Result<NodeInventory> ParseHamiRegister(std::string_view text);
// The inventory a Node object carries: vgpu.io/gpu-inventory, else HAMi's annotation, else
// std::nullopt. Errors name the node and the annotation.
Result<std::optional<NodeInventory>> InventoryOfNode(const Json& node);

}  // namespace vgpu::k8s
