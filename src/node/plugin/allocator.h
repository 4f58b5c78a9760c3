// Allocator: the device plugin's decisions, independent of gRPC.
//
// Prefer(available, must_include, size) -> the units kubelet should pick for the container it is
// admitting: one free unit on each GPU the scheduler assigned to the oldest pending container
// (AssignmentStore::Prefer, which promises them).
//
// Allocate(unit IDs) -> what one container gets: the units resolve to the container they were
// promised to (AssignmentStore::Resolve); its slice directory is created (SliceManager) and its
// environment and mounts are built from it. Nothing is shared between calls for different
// containers beyond the store's reader lock: 32 pods starting at once are allocated in parallel.
//
// A lookup that finds no assignment refreshes the pod list once (PodSync, shared between
// concurrent callers) and tries again, since kubelet may learn of a pod before our last list.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "node/cluster/pod_sync.h"
#include "node/metrics/metrics_text.h"
#include "node/modes/mig_manager.h"
#include "node/modes/mps.h"
#include "node/node_state.h"
#include "node/plugin/assignment_store.h"
#include "node/plugin/device_list.h"
#include "node/plugin/pod_resources.h"
#include "node/slice.h"
#include "slice/spill_admission.h"

namespace vgpu::node {

// The slice of container `e` before its devices: pod, container, priority, compute settings.
ContainerSlice SpecOf(const AssignmentEntry& e);

class Allocator {
 public:
  Allocator(const NodeState* state, AssignmentStore* store, PodSync* pods, SliceManager* slices,
            int64_t (*now_unix)() = nullptr);

  Result<ContainerAllocation> Allocate(const std::vector<std::string>& unit_ids);
  // NVIDIA's MIG resources (nvidia.com/mig-<profile>) of GPUs in mode mig: kubelet names the
  // instances by MIG UUID (NodeState::MigDevices). The container they resolve to
  // (AssignmentStore::ResolveMig) runs in exactly these instances: their UUIDs in the slice and
  // NVIDIA_VISIBLE_DEVICES, their /dev/nvidia-caps nodes with --pass-device-specs, its assigned
  // limits inside each (never more than the instance). kInvalidArgument for an ID that is not
  // a complete instance of such a GPU.
  Result<ContainerAllocation> AllocateMig(const std::vector<std::string>& mig_uuids);
  std::vector<std::string> PreferMig(const std::vector<std::string>& available,
                                     const std::vector<std::string>& must_include, int size);
  // MIG: the manager of mig-dynamic GPUs' instances (not owned; null: no mig-dynamic GPU). A
  // device assigned with "mig" resolves to its instance: on a mig-dynamic GPU the manager makes
  // exactly the assigned (profile, start) for the pod; on a static mig GPU it is the existing
  // instance there. The container then gets the MIG device (its UUID in the slice and in
  // NVIDIA_VISIBLE_DEVICES) with the assigned limits inside it. Set before the first Allocate.
  void SetMigManager(MigManager* manager) { mig_ = manager; }
  // Called after a MIG instance was made for a container, so the node's view (inventory,
  // /metrics, top) lists it at once rather than at the next housekeeping round.
  void SetMigChanged(std::function<void()> changed) { mig_changed_ = std::move(changed); }
  // MPS: containers on GPUs in mode mps get the MPS pipe directory (mounted) and their slice as
  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE / CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (node/modes/mps.h), beside
  // libvgpu's limits. Not owned; null: no MPS. Set before the first Allocate.
  void SetMps(const MpsManager* mps) { mps_ = mps; }
  // How containers are handed their GPUs (default: NVIDIA_VISIBLE_DEVICES only). Set before
  // the first Allocate.
  void SetDeviceList(DeviceListOptions options) { device_list_ = std::move(options); }
  // Spill admission (slice/spill_admission.h, docs/oversubscription.md) of a container whose
  // memory mode is spill: on each of its GPUs, what the node's other slices promise there and
  // spill now (their regions), the host's MemAvailable read from `meminfo`. A refusal fails the
  // Allocate with the reason (kFailedPrecondition). Set before the first Allocate.
  void SetSpillAdmission(slice::SpillPolicy policy, std::string meminfo) {
    spill_policy_ = policy;
    meminfo_ = std::move(meminfo);
  }

  // PreStartContainer: checks with kubelet's PodResources API that the container kubelet gave
  // `unit_ids` to is the container whose slice those units hold. kFailedPrecondition on a
  // mismatch (the container must not start with another pod's limits). When kubelet's API
  // cannot be asked or does not list the units yet, the start is allowed (and counted as
  // unverified). Without a PodResourcesSource every start is allowed.
  Status VerifyPreStart(const std::vector<std::string>& unit_ids);
  void SetPodResources(PodResourcesSource* source, std::string resource_name) {
    pod_resources_ = source;
    resource_name_ = std::move(resource_name);
  }
  uint64_t prestart_ok() const { return prestart_ok_.load(); }
  uint64_t prestart_mismatch() const { return prestart_mismatch_.load(); }
  uint64_t prestart_unverified() const { return prestart_unverified_.load(); }
  std::vector<std::string> Prefer(const std::vector<std::string>& available,
                                  const std::vector<std::string>& must_include, int size);

  // Counters and latency for /metrics.
  uint64_t allocations_ok() const { return ok_.load(); }
  uint64_t allocations_failed() const { return failed_.load(); }
  uint64_t preferences_matched() const { return preferred_.load(); }
  uint64_t preferences_unmatched() const { return unpreferred_.load(); }
  const Histogram& latency() const { return latency_; }

 private:
  Status CheckUnits(const std::vector<std::string>& unit_ids) const;
  Status AdmitSpill(const ContainerSlice& spec,
                    const std::map<std::string, uint64_t>& capacity) const;
  Result<ContainerAllocation> AllocateOnce(const std::vector<std::string>& unit_ids);
  Result<ContainerAllocation> AllocateMigOnce(const std::vector<std::string>& mig_uuids);
  // Runs `once`, and again after a refresh of the pod list when it found no assignment;
  // counts and times the result.
  Result<ContainerAllocation> Counted(const std::vector<std::string>& ids,
                                      const std::function<Result<ContainerAllocation>()>& once);
  // The slice of `spec` for container `e`, and what kubelet gives the container for it.
  // `capacity_of` (memory of each device by UUID) is what the spill admission checks against.
  Result<ContainerAllocation> Finish(ContainerSlice spec, const AssignmentEntry& e,
                                     const std::map<std::string, uint64_t>& capacity_of);
  // The complete instance with this MIG UUID on a GPU in mode mig.
  struct StaticMig {
    device::MigInstance instance;
    AssignmentStore::MigDeviceRef ref;
    int gpu_index = 0;  // its parent's NVML index
  };
  std::optional<StaticMig> FindStaticMig(const std::string& mig_uuid) const;
  Result<device::MigInstance> ResolveMig(const AssignmentEntry& e, const device::DeviceInfo& gpu,
                                         const AssignedDevice& assigned);

  const NodeState* state_;
  AssignmentStore* store_;
  PodSync* pods_;
  SliceManager* slices_;
  int64_t (*now_unix_)();
  DeviceListOptions device_list_;
  slice::SpillPolicy spill_policy_;
  std::string meminfo_ = "/proc/meminfo";
  MigManager* mig_ = nullptr;
  std::function<void()> mig_changed_;
  const MpsManager* mps_ = nullptr;
  std::atomic<uint64_t> ok_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> preferred_{0};
  std::atomic<uint64_t> unpreferred_{0};
  Histogram latency_;
  PodResourcesSource* pod_resources_ = nullptr;
  std::string resource_name_;
  std::atomic<uint64_t> prestart_ok_{0};
  std::atomic<uint64_t> prestart_mismatch_{0};
  std::atomic<uint64_t> prestart_unverified_{0};
};

}  // namespace vgpu::node
