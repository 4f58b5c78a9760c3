// MIG placement for one node: which GPU and which MIG instance a container gets, decided
// together, in the form the pod assignment records (pod_assignment.h "mig").
//
// Contract:
// - Static "mig" GPUs: the instances the inventory lists, minus those an assignment on the node
//   names by UUID, are free. A request for a profile (NVIDIA's resource nvidia.com/mig-<profile>)
//   takes a free instance of exactly that profile; a memory request (HAMi-style nvidia.com/gpu +
//   gpumem + gpucores) the smallest free instance with at least that memory. The assignment
//   carries the instance's UUID.
// - "mig-dynamic" GPUs with a MIG table: the layout is the inventory's instances plus the
//   (profile, start) of every assignment on the GPU not yet in the inventory (instances being
//   created). A profile request takes that profile; a memory request the smallest profile (by
//   memory, then slices; "+me" only when asked by name) with at least that memory and a free
//   placement, as HAMi's selectMigCandidate; the start is the fragmentation-aware choice
//   (mig/choice.h) under the request mix: `mix` when given, else the mix of the instances on
//   the node's mig-dynamic GPUs of that model (mig::MixOfInstances: what the node runs now,
//   over a uniform prior). No UUID: the node creates the instance.
// - Candidates are ranked by the instance's memory (least waste), then static before dynamic
//   (an existing instance strands nothing), then the resulting layout's CapacityScore, then GPU
//   index. Unhealthy GPUs and GPUs the pod's UUID / type annotations exclude are skipped;
//   "shared", "whole" and "mps" GPUs are never MIG candidates.
// - memory_mib / cores in the choice are the container's limits inside the instance: the
//   request's when smaller than the instance (a software slice inside it), else the instance's
//   memory and 100.
// Pure: no I/O, no clock.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "k8s/wire/gpu_inventory.h"
#include "k8s/wire/pod_assignment.h"
#include "k8s/wire/pod_request.h"
#include "mig/choice.h"

namespace vgpu::k8s {

struct MigRequest {
  std::string profile;                // "1g.18gb" from nvidia.com/mig-1g.18gb; "" = by memory
  std::optional<int64_t> memory_mib;  // for a memory request (required when profile is "")
  std::optional<int> cores;           // percent, 1..100
};

// "nvidia.com/mig-1g.18gb" -> "1g.18gb", "nvidia.com/mig-1g.18gb.me" -> "1g.18gb.me"; nullopt for
// other resource names.
std::optional<std::string> MigProfileOfResource(std::string_view resource);

// Whether any GPU of the assignment names a MIG instance.
bool AssignmentHasMig(const PodAssignment& a);

struct MigChoice {
  int gpu_index = 0;
  std::string gpu_uuid;
  GpuMode mode = GpuMode::kMig;
  AssignedMig mig;
  int64_t instance_memory_mib = 0;
  int64_t memory_mib = 0;  // the container's limit inside the instance
  int cores = 100;
  mig::CapacityScore score;  // of the GPU's layout after the choice
};

// The best MIG instance on `node` for `request`, given the assignments of the pods already on the
// node; kResourceExhausted with the reason when none fits ("no free 1g.18gb instance",
// "no MIG profile with >= 90000 MiB fits on GPU 0: ..."), kInvalidArgument for a bad request.
// `pod` (optional) applies the pod's UUID and type annotations; `mix` (optional) is a request
// mix of the GPUs' table, replacing the node's own.
Result<MigChoice> ChooseMig(const NodeInventory& node, const std::vector<PodAssignment>& on_node,
                            const MigRequest& request, const PodGpuRequest* pod = nullptr,
                            const mig::RequestMix* mix = nullptr);

}  // namespace vgpu::k8s
