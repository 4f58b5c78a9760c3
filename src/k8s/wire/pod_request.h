// What a pod asks of GPUs, read from its container resources and annotations with HAMi's names
// (the prefix is configurable, default "nvidia.com"):
//
//   <prefix>/gpu                 GPUs for the container, each a distinct physical GPU (1..64)
//   <prefix>/gpumem              memory per GPU in MiB
//   <prefix>/gpumem-percentage   memory per GPU as a percent of the GPU's memory (1..100)
//   <prefix>/gpucores            compute per GPU in percent (1..100; 100 = the GPU alone)
//   <prefix>/priority            0 (high) or 1 (low); passed to the node, not used for placement
//   <prefix>/mig-<profile>       one MIG instance of that profile (NVIDIA's mixed-strategy names,
//                                nvidia.com/mig-1g.18gb, nvidia.com/mig-1g.18gb.me): value 1, not
//                                with <prefix>/gpu or gpumem-percentage; gpumem and gpucores then
//                                limit the container inside the instance. A pod asking for one
//                                has no other GPU container. Such a request goes only to MIG GPUs
//                                (mig_placement.h).
//   annotations <prefix>/use-gputype, nouse-gputype   comma-separated model substrings
//                                                     (case-insensitive), allow / forbid
//   annotations <prefix>/use-gpuuuid, nouse-gpuuuid   comma-separated GPU UUIDs, allow / forbid
//
// Limits are read first, requests when a limit is absent (Kubernetes makes them equal for
// extended resources). A container that gives gpumem, gpumem-percentage or gpucores without
// <prefix>/gpu asks for one GPU (HAMi's default). A gpumem of 0 counts as not given.
//
// Mapping to the placement engine's per-GPU request, on a GPU with C MiB (ShapeOn):
//   memory  = gpumem, else C * gpumem-percentage / 100, else C * default_memory_percent / 100
//             (HAMi's default of 100%), or, when default_memory_percent is 0, C * cores / 100.
//   milli   = gpucores * 10 when gpucores is given; 1000 (a whole GPU, HAMi's exclusive mode) when
//             neither memory nor cores is given; otherwise ceil(1000 * memory / C), so a pod that
//             states only memory reserves compute in proportion.
//   cores   = the SM limit the node enforces: gpucores, or 100 (no throttling) when not given.
// The pod's request is the envelope over its containers (PodShapeOn): app containers (and
// restartable "sidecar" init containers) use distinct GPUs, so their counts add up; ordinary
// init containers run before them, so the pod needs max(sum of app counts, each init count)
// GPUs, as kube-scheduler computes init-container requests; every GPU is charged the largest
// per-GPU milli and memory of any container.
//
// The pod's CPU and memory requests come along (PodHostRequestOf), so that the placement engine
// sees them as kube-scheduler does.
//
// Errors are kInvalidArgument naming the container, the resource and the value, e.g.
// "container 'train': nvidia.com/gpucores=101 is outside 1..100".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "k8s/api/kube_client.h"
#include "k8s/wire/host_request.h"

namespace vgpu::k8s {

struct ResourceNames {
  std::string prefix = "nvidia.com";
  std::string Gpu() const { return prefix + "/gpu"; }
  std::string Memory() const { return prefix + "/gpumem"; }
  std::string MemoryPercent() const { return prefix + "/gpumem-percentage"; }
  std::string Cores() const { return prefix + "/gpucores"; }
  std::string Priority() const { return prefix + "/priority"; }
  std::string UseTypes() const { return prefix + "/use-gputype"; }
  std::string NoUseTypes() const { return prefix + "/nouse-gputype"; }
  std::string UseUuids() const { return prefix + "/use-gpuuuid"; }
  std::string NoUseUuids() const { return prefix + "/nouse-gpuuuid"; }
  std::string MigPrefix() const { return prefix + "/mig-"; }
};

struct RequestOptions {
  ResourceNames names;
  int default_memory_percent = 100;  // 0..100; 0 = proportional to cores
};

struct ContainerGpuRequest {
  std::string name;
  bool init = false;  // an init container that runs before the app containers (not a sidecar)
  int count = 0;
  std::optional<int64_t> memory_mib;
  std::optional<int> memory_percent;
  std::optional<int> cores;
  int priority = -1;
  std::string mig_profile;  // from <prefix>/mig-<profile>, as written ("1g.18gb.me"); "" = none
  friend bool operator==(const ContainerGpuRequest&, const ContainerGpuRequest&) = default;
};

struct PodGpuRequest {
  std::vector<ContainerGpuRequest> containers;  // those that ask for GPUs, in spec order
  std::vector<std::string> use_types, nouse_types, use_uuids, nouse_uuids;
  HostResources host;  // the pod's CPU and memory requests (host_request.h)
  // vgpu.io/allow-shared-fault-domain: "true": the pod may share an MPS GPU's fault domain.
  bool allow_shared_fault_domain = false;
  // The annotation vgpu.io/comm-pattern as given (validated by ParsePodGpuRequest); "" = none.
  std::string comm_pattern;
  // vgpu.io/topology: require-nvlink: the pod's GPUs must be NVLink-connected
  // (topo/nvlink_sets.h); a node without such a free set is refused.
  bool require_nvlink = false;
  bool HasGpus() const { return !containers.empty(); }
  // A pod asking for a MIG profile by name (<prefix>/mig-<profile>): served by MIG GPUs only.
  bool AsksMigProfile() const {
    return containers.size() == 1 && !containers.front().mig_profile.empty();
  }
  // Neither GPUs nor CPU nor memory: the pod takes nothing the placement engine counts.
  bool TakesNothing() const { return !HasGpus() && host.IsZero(); }
  // Whether a GPU model / UUID passes the type / UUID annotations.
  bool AllowsModel(const std::string& model) const;
  bool AllowsUuid(const std::string& uuid) const;
  bool HasUuidConstraints() const { return !use_uuids.empty() || !nouse_uuids.empty(); }
  friend bool operator==(const PodGpuRequest&, const PodGpuRequest&) = default;
};

Result<PodGpuRequest> ParsePodGpuRequest(const Json& pod, const RequestOptions& options);

struct GpuShape {
  int32_t milli = 0;
  int64_t memory_mib = 0;
  int cores = 100;
};
// A container's share of one GPU of `capacity_mib`; kResourceExhausted when its memory exceeds
// the capacity.
Result<GpuShape> ShapeOn(const ContainerGpuRequest& c, int64_t capacity_mib,
                         const RequestOptions& options);

struct PodShape {
  int num_gpus = 0;
  int32_t milli = 0;
  int64_t memory_mib = 0;
};
Result<PodShape> PodShapeOn(const PodGpuRequest& r, int64_t capacity_mib,
                            const RequestOptions& options);

}  // namespace vgpu::k8s
