// The ResourceSlices (resource.k8s.io/v1) that describe one node's GPUs to kube-scheduler.
// Pool <node>, all slices with nodeName <node> and the same pool generation. Per GPU one counter
// set gpu-<i> {memory (bytes), multiprocessors, and memory-slice-0..7 on MIG-capable GPUs} and
// its devices:
//     gpu-<i>: the whole GPU, allowMultipleAllocations, capacity
//       memory: bytes, requestPolicy default = all, validRange {min 1Mi, step 1Mi}
//       cores:  percent, requestPolicy default 100, validRange {min 1, max 100, step 1}
//     consuming all of gpu-<i>'s counters (a MIG device of the same GPU consumes part of them,
//     so the scheduler never gives out a software slice and a MIG device of one GPU together);
//     attributes: type "gpu", uuid, productName, architecture, cudaComputeCapability (version),
//     driverVersion (version), index, numaNode, resource.kubernetes.io/pcieRoot;
//     published when SliceGpu::software (not on a GPU with a static MIG layout);
//     gpu-<i>-mig-<profile>-<start>: one per MIG device the GPU offers (SliceGpu::mig_devices,
//     dra/gpu_offers.h), given to one claim, consuming the profile's memory and multiprocessors
//     and the memory slices of its placement from gpu-<i>'s counters; attributes type "mig",
//     profile, parentUUID, placementStart, placementSize, uuid (once the instance exists) and
//     the parent's other attributes; capacity memory, multiprocessors.
//
// Where the counter sets go depends on the API server (KEP-4815, partitionable devices, whose
// ResourceSlice rules changed incompatibly between 1.34 and 1.35), SliceLayout:
//
//   kCountersApart (Kubernetes 1.35 and later: a slice has devices or sharedCounters, not both)
//     <node>-gpu.vgpu.io-counters-<k>   sharedCounters only, at most 8 sets per slice
//     <node>-gpu.vgpu.io-devices-<k>    devices only, at most 64 per slice (they consume counters)
//   kCountersWithDevices (Kubernetes 1.34: a device consumes only counter sets of its own slice)
//     <node>-gpu.vgpu.io-<k>            the counter sets of some GPUs and all their devices: at
//                                       most 32 counters in all sets, 128 devices, and 1024
//                                       counters consumed by the devices of one slice (three
//                                       MIG-capable GPUs, or 16 others, per slice)
//
// An unhealthy GPU's devices are left out (its counter set stays). Pure logic.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "device/device_backend.h"

namespace vgpu::dra {

// Kubernetes 1.35 and later (kCountersApart).
inline constexpr int kMaxDevicesPerSliceWithCounters = 64;
inline constexpr int kMaxCounterSetsPerSlice = 8;
inline constexpr int kMaxCountersPerSet = 32;
// Kubernetes 1.34 (kCountersWithDevices): per slice.
inline constexpr int kMaxDevicesPerSlice134 = 128;
inline constexpr int kMaxSharedCountersPerSlice134 = 32;
inline constexpr int kMaxConsumedCountersPerSlice134 = 1024;
inline constexpr int kMigMemorySlices = 8;

enum class SliceLayout { kCountersApart, kCountersWithDevices };

// "1.35" (kCountersApart) or "1.34" (kCountersWithDevices): the oldest Kubernetes release
// whose API server takes the layout.
std::string SliceLayoutName(SliceLayout layout);
// The layout the API server of Kubernetes <major>.<minor> takes; kFailedPrecondition for a
// release before 1.34 (no resource.k8s.io/v1 there).
Result<SliceLayout> SliceLayoutForRelease(int major, int minor);
// The layout of the API server's /version answer ({"major": "1", "minor": "35"}; a minor of
// "35+", as some managed clusters report, is 35); kInvalidArgument when it has no numbers.
Result<SliceLayout> SliceLayoutForVersion(const nlohmann::json& version);

// One MIG device a GPU can offer: a GPU instance profile at one placement (start memory slice).
// Filled from what the driver reports for GPUs in MIG modes (dra/gpu_offers.h).
struct MigDeviceSpec {
  std::string profile;    // "1g.18gb", "1g.18gb+me"
  int start = 0;          // first memory slice
  int memory_slices = 1;  // placement size
  int sm_count = 0;       // multiprocessors
  uint64_t memory_bytes = 0;
  std::string uuid{};  // "MIG-..." when the instance exists (static layouts), else ""
  int profile_id = 0;  // NVML GPU instance profile id
};

// The device name of a MIG device: "gpu-<i>-mig-<profile>-<start>", the profile's '.' and '+'
// spelled '-' ("gpu-0-mig-1g-18gb-0", "gpu-0-mig-1g-18gb-me-3").
std::string MigDeviceName(int gpu_index, const MigDeviceSpec& mig);

struct SliceGpu {
  device::DeviceInfo info{};
  bool healthy = true;
  bool mig_capable = false;
  bool software = true;                      // the whole-GPU device gpu-<i> is offered
  std::string architecture{};                // "Hopper"; "" unknown
  std::string compute_capability{};          // "9.0"; "" unknown
  std::string driver_version{};              // "550.54.15"; "" unknown
  std::string pcie_root{};                   // "pci0000:00"; "" unknown
  std::vector<MigDeviceSpec> mig_devices{};  // the MIG devices it offers (MIG mode)
};

// Architecture, compute capability and MIG capability from the product name (A100, A30, H100,
// H200, H20, B200, L4, L40, T4, V100...); unknown names keep the fields empty.
void FillFromProductName(SliceGpu* gpu);

// "550.54.15" from a backend description "NVML ... (driver 550.54.15)"; "" when absent.
std::string DriverVersionOf(const std::string& backend_description);

// A version attribute's semantic version: "9.0" -> "9.0.0", "550.54.15" stays; "" when the text
// is not dotted numbers.
std::string SemVer(const std::string& dotted);

std::vector<nlohmann::json> BuildResourceSlices(const std::string& node, const std::string& driver,
                                                const std::vector<SliceGpu>& gpus,
                                                int64_t generation,
                                                SliceLayout layout = SliceLayout::kCountersApart);

}  // namespace vgpu::dra
