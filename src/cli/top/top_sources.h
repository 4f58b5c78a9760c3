// What `vgpu top` shows, gathered: the GPUs (through the DeviceBackend of src/device, the same
// NVML code the node daemon uses) and the slices of this machine, from two places:
//   - the registry of `vgpu run` (<state dir>/slices, slice/registry.h), kind "run";
//   - the slices of the node daemon (its --slice-dir, default /var/lib/vgpu/slices; node/slice.h),
//     one per container of a Kubernetes pod, kind "pod".
// Everything is read-only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "device/device_backend.h"
#include "slice/registry.h"

namespace vgpu::cli {

struct GpuInfo {
  unsigned index = 0;
  std::string name;
  std::string uuid;
  uint64_t memory_total = 0;
  uint64_t memory_used = 0;
  int utilization = -1;  // percent, -1 unknown
  // MIG instances when MIG is on (each a CUDA device of its own; slices name them by UUID).
  std::vector<device::MigInstance> mig;
};

// The GPUs, discovered once (a live view opens NVML once) and sampled at each Read().
class TopGpus {
 public:
  // `nvml_path`: the NVML library to load (dlopen name or path).
  explicit TopGpus(const std::string& nvml_path);
  // Why there are no GPUs ("" when NVML answered).
  const std::string& note() const { return note_; }
  std::vector<GpuInfo> Read() const;

 private:
  std::unique_ptr<device::DeviceBackend> backend_;
  std::vector<device::DeviceInfo> devices_;
  std::string note_;
};

struct TopSlice {
  slice::SliceEntry entry;         // name, directory, region snapshot (or the error reading it)
  std::string kind;                // "run" (vgpu run) or "pod" (the node daemon)
  std::string region_path;         // its accounting region; names the slice in the arbiters
  std::string arbiter_dir;         // the arbiters its processes join
  std::vector<std::string> uuids;  // GPU UUID per CUDA index, when the slice says (pods)
  // Pods only:
  std::string ns, pod, pod_uid, container;

  // The UUID of device `d`: as its processes recorded it, else as the slice says.
  std::string Uuid(int d) const;
};

// The node daemon's slice directory for `vgpu top`: `flag` when given ("none" or "" switches
// them off), else $VGPU_NODE_SLICE_DIR, else /var/lib/vgpu/slices when it exists, else "".
std::string NodeSliceDir(const std::string* flag);

// The slices of `state_dir`'s registry, then those of the node daemon under `node_slice_dir`
// ("" for none), in name order within each.
std::vector<TopSlice> CollectSlices(const std::string& state_dir,
                                    const std::string& node_slice_dir);

}  // namespace vgpu::cli
