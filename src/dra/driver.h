// Driver: NodePrepareResources / NodeUnprepareResources of the vgpu DRA driver, without gRPC.
//
// Prepare(claim):
//   1. a claim already in the checkpoint gets the answer it got before (its GPUs must still be
//      healthy, else an error naming the GPU);
//   2. otherwise the ResourceClaim is read from the API server (ClaimSource) and its allocation
//      for this driver parsed (dra/claim.h): each result must name this node's pool and one of
//      its devices (gpu-<index>, dra/resource_slices.h), on a healthy GPU; the memory and cores it
//      consumed (consumedCapacity; the whole GPU when absent) become the slice's limits, and the
//      opaque configs (dra/gpu_config.h) its compute settings;
//   3. a slice is created (node/slice.h: the limits file, the accounting region), then a CDI spec
//      with its container edits (dra/cdi_spec.h), then the checkpoint is saved; a failure undoes
//      the steps before it. The answer is one Device per allocation result with the CDI ids
//      vgpu.io/gpu=claim-<uid> and, when nvidia_cdi_kind is set, <kind>=<GPU UUID>.
// Unprepare(claim): removes the CDI spec, the slice, the claim's dynamic MIG instance and the
// checkpoint entry; a claim that is not prepared is not an error (kubelet retries).
//
// MIG (EnableMig; without it every GPU offers its whole-GPU device only): the devices are those
// of the GPUs' offers (dra/gpu_offers.h). A MIG device's slice is the instance: its MIG UUID in
// NVIDIA_VISIBLE_DEVICES and the limits file, the instance's memory, all its SMs, and the device
// nodes (the parent's /dev/nvidia<minor>, /dev/nvidiactl, the /dev/nvidia-caps nodes of the GPU
// and compute instance; node/plugin/device_list.h) in the CDI spec. On a static (`mig`) GPU that is
// the instance of the layout; on a `mig-dynamic` GPU the instance at exactly the device's (profile,
// start) is created through node::MigManager (journal <state_dir>/mig-claims, keyed by claim
// UID) and destroyed at Unprepare. A mig-dynamic GPU is switched into MIG mode for a MIG claim,
// and out of it for a software claim, when no claim of the other kind is prepared on it (the
// counters make the scheduler allocate only one kind per GPU; Hopper and later switch at once).
// Errors are per claim and name the claim and the field; the other claims of the call go on.
// Init() creates the directories, loads the checkpoint and removes slices and CDI specs of this
// driver that the checkpoint does not know (left by a crash between the steps).
// Thread-safe: calls are serialized; the new claims of one Prepare call are made in parallel
// (up to 8 at a time), each in its own files, and the checkpoint is saved once per call.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "device/device_backend.h"
#include "dra/checkpoint.h"
#include "dra/claim.h"
#include "dra/gpu_offers.h"
#include "node/modes/mig_manager.h"
#include "node/plugin/device_list.h"
#include "node/slice.h"

namespace vgpu::dra {

inline constexpr const char* kDriverName = "gpu.vgpu.io";

struct DriverOptions {
  std::string driver = kDriverName;
  std::string pool;  // the node's name
  std::string cdi_dir = "/var/run/cdi";
  std::string state_dir = "/var/lib/vgpu/dra";     // checkpoint.json
  node::SliceLayout slices;                        // root defaults to <state_dir>/slices
  node::DeviceListOptions device_list;             // NVIDIA_VISIBLE_DEVICES, device nodes
  std::string nvidia_cdi_kind = "nvidia.com/gpu";  // "": return only vgpu.io/gpu ids
};

// Reads ResourceClaims (the API server; a fake in tests).
class ClaimSource {
 public:
  virtual ~ClaimSource() = default;
  virtual Result<nlohmann::json> GetClaim(const std::string& ns, const std::string& name) = 0;
};

// The device name of the whole GPU with NVML index `index`: "gpu-<index>".
std::string GpuDeviceName(int index);

class Driver {
 public:
  using HealthFn = std::function<bool(const std::string& uuid)>;
  Driver(DriverOptions options, std::vector<device::DeviceInfo> gpus, ClaimSource* claims,
         HealthFn healthy);

  Status Init();

  // Serves MIG devices: `offers` by GPU position, `backend` (not owned) makes the instances.
  // Call after Init() and before serving. Recovers the MIG journal (node/modes/mig_manager.h) on
  // the mig-dynamic GPUs and destroys the instances no prepared claim holds (a crash between
  // creating one and saving the checkpoint).
  Status EnableMig(device::DeviceBackend* backend, std::vector<GpuOffer> offers);
  // The offers and the backend alone, for PlanCdiSpec: no journal is read, nothing changes.
  void SetOffers(device::DeviceBackend* backend, std::vector<GpuOffer> offers);
  // The NVML indices of the GPUs prepared claims use (kept out of mode changes).
  std::set<int> GpusInUse() const;

  struct PrepareResult {
    std::vector<PreparedDevice> devices;
    std::string error;
  };
  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims);
  std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims);

  // The CDI spec Prepare would write for `ref` (its claim read from the ClaimSource), making
  // and changing nothing: no slice files, no MIG instance or mode change, no checkpoint. A MIG
  // device of a mig-dynamic GPU is kFailedPrecondition (its instance exists only once
  // prepared). Needs no Init().
  Result<nlohmann::json> PlanCdiSpec(const ClaimRef& ref);

  size_t prepared_count() const;
  const DriverOptions& options() const { return options_; }

 private:
  // A device of this node: a whole GPU (mig null) or a MIG device of the GPU's offer.
  struct Target {
    const device::DeviceInfo* gpu = nullptr;
    const GpuOffer* offer = nullptr;
    const MigDeviceSpec* mig = nullptr;
  };
  // A claim's devices, slice record and container edits; with `dry_run` nothing is made or
  // changed (SliceManager::Plan, no MIG instance, no mode change).
  struct Built {
    PreparedClaim claim;
    node::ContainerAllocation allocation;
  };
  Result<Built> BuildClaim(const ClaimRef& ref, bool dry_run);
  Result<PreparedClaim> PrepareOne(const ClaimRef& ref);
  Result<PreparedClaim> PrepareSteps(const ClaimRef& ref);
  Result<device::MigInstance> MigInstanceFor(const ClaimRef& ref, const AllocatedDevice& d,
                                             const Target& t);
  Status SetMigModeFor(const ClaimRef& ref, const AllocatedDevice& d, const Target& t, bool on);
  Status ReleaseMig(const std::string& claim_uid);
  Status CheckHealth(const PreparedClaim& claim) const;
  const device::DeviceInfo* FindGpu(const std::string& uuid) const;
  std::optional<Target> FindDevice(const std::string& name) const;

  DriverOptions options_;
  std::vector<device::DeviceInfo> gpus_;
  ClaimSource* claims_;
  HealthFn healthy_;
  node::SliceManager slices_;
  mutable std::mutex mu_;
  PreparedClaims prepared_;
  // MIG (EnableMig): the offers by GPU position, the backend and the manager of dynamic
  // instances; mig_mu_ serializes instance and mode changes.
  std::vector<GpuOffer> offers_;
  device::DeviceBackend* backend_ = nullptr;
  std::unique_ptr<node::MigManager> mig_;
  std::mutex mig_mu_;
};

}  // namespace vgpu::dra
