// Slices on the host: one directory per container that got GPU units, created at Allocate and
// removed when its pod is gone. The node daemon owns the root directory (--slice-dir).
//
//   <root>/ld.so.preload             one line: the container path of libvgpu.so
//   <root>/<pod uid>_<container>/
//     slice.json                     what the slice is (pod, container, devices, limits, paths);
//                                    host only
//     limits                         the read-only limits file (0444), mounted at /etc/vgpu/limits
//     <ns>_<pod>_<container>/        mounted read-write at the same path in the container; holds
//                                    `region`, the slice's accounting region that libvgpu.so maps
//   <arbiter dir>/<GPU UUID>.arbiter the per-GPU compute arbiters (shm/arbiter.h), one directory
//                                    for the whole node, mounted read-write at the same path in
//                                    every container, so that all slices of a GPU share its arbiter
//
// The region and the arbiter directory have the same path on the host and in the container:
// libvgpu.so names a slice in the arbiter by the path of its region (shm::SliceKey), so the node
// daemon and `vgpu top` find a container's arbiter record from the host. The region's directory
// is named after the pod so that the arbiter's display name (the directory's name) tells the
// slice; the pod UID in the path above it keeps the key unique across pods of the same name.
//
// The limits file is written by slice::LimitsFileText (slice/limits_file.h: memory.<i>,
// cores.<i>, uuid.<i> and the compute keys; docs/intercept.md and docs/compute.md); <i> is the CUDA
// index inside the container, i.e. the position in NVIDIA_VISIBLE_DEVICES. Files are written to a
// temporary name and renamed, so a reader never sees half a file. Create() is idempotent: a
// repeated Allocate for the same container rewrites the same content.
//
// Thread safety: Create/Remove of different slices run concurrently without a shared lock
// (each touches only its own directory); CollectGarbage may run concurrently with Create (a
// slice younger than the grace period is never collected).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "slice/compute_settings.h"

namespace vgpu::node {

// Where things are on the host and in the container.
struct SliceLayout {
  std::string root = "/var/lib/vgpu/slices";
  std::string host_libvgpu = "/usr/local/vgpu/libvgpu.so";
  std::string container_libvgpu = "/usr/local/vgpu/libvgpu.so";
  std::string container_limits = "/etc/vgpu/limits";
  // The node's compute arbiter directory (host path = container path).
  std::string arbiter_dir = "/run/vgpu/arbiter";
  // Every slice joins its GPUs' arbiters, also one without compute settings (written as
  // weight=1: a max share of 100, no guarantee), so that priorities and guarantees hold against
  // every container on the GPU. False: only slices with compute settings take part.
  bool arbitrate_all = true;
  bool preload = true;  // mount <root>/ld.so.preload at /etc/ld.so.preload
  // Bytes libvgpu.so charges per CUDA context (context_overhead in the limits file); -1: its
  // default (a real GPU's). The simulated GPU's contexts take no device memory: 0 there.
  int64_t context_overhead = -1;
};

struct SliceDevice {
  std::string uuid;
  int node_index = 0;  // NVML index on the node
  int unit = 0;
  uint64_t memory_bytes = 0;
  int cores = 100;  // percent
  // A MIG device (uuid "MIG-..."): its GPU and compute instance ids, for its device nodes (not
  // stored with the slice; set at Allocate).
  int mig_gi = -1;
  int mig_ci = -1;
};

// A container's slice as its pod and the assignment give it: the pod, the compute settings and
// the devices with their limits (a command's slice is slice::SliceSpec; both are written by
// slice::LimitsFileText).
struct ContainerSlice {
  std::string pod_ns;
  std::string pod_name;
  std::string pod_uid;
  std::string container;
  int priority = -1;                 // nvidia.com/priority: 0 high, 1 low, -1 not given
  slice::ComputeSettings compute;    // vgpu.io/compute annotations
  std::vector<SliceDevice> devices;  // in CUDA index order inside the container

  // The priority level libvgpu.so runs the slice at (compute.level, else the HAMi number's).
  int Level() const;
  // True when the slice has compute settings that make libvgpu.so arbitrate its launches: a max
  // share below 100 on a GPU, a guarantee, weight or mode, or a priority level other than
  // normal. (A time slice alone, or nvidia.com/priority 1, does not.)
  bool HasComputeSettings() const;
};

struct SliceRecord {
  ContainerSlice spec;
  std::string name;         // "<pod uid>_<container>"
  std::string dir;          // host path of the slice directory
  std::string limits_path;  // host path of the limits file
  std::string region_path;  // path of the accounting region (host = container)
  std::string arbiter_dir;  // the node's arbiter directory when the slice was created
  bool arbitrated = false;  // its processes join the arbiters of its GPUs (gated launches)
  int64_t created_unix = 0;
};

// What kubelet is told to give the container.
struct ContainerAllocation {
  struct Mount {
    std::string container_path;
    std::string host_path;
    bool read_only = true;
  };
  struct DeviceNode {
    std::string container_path;
    std::string host_path;
    std::string permissions;  // any of "r", "w", "m"
  };
  std::map<std::string, std::string> envs;
  std::vector<Mount> mounts;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;  // fully qualified CDI names (node/plugin/device_list.h)
  std::vector<DeviceNode> devices;       // device nodes, with --pass-device-specs
};

// Text of the limits file of `slice` (its region path is the one in the file).
std::string LimitsFileText(const SliceRecord& slice, const SliceLayout& layout);

// The name of the directory that holds a slice's region: "<ns>_<pod>_<container>", cut to a
// length that fits a file name.
std::string RegionDirName(const ContainerSlice& spec);

// Environment, mounts and annotations for a container that owns `slice`: libvgpu.so preloaded,
// the limits file read-only, the region's directory and the arbiter directory read-write (at
// their host paths), NVIDIA_VISIBLE_DEVICES, and the HAMi-core variables
// (CUDA_DEVICE_MEMORY_LIMIT_<i>, CUDA_DEVICE_SM_LIMIT[_<i>], CUDA_DEVICE_MEMORY_SHARED_CACHE,
// CUDA_TASK_PRIORITY) plus VGPU_LIMITS_FILE, VGPU_ARBITER_DIR, VGPU_PRIORITY and VGPU_SLICE.
ContainerAllocation BuildAllocation(const SliceRecord& slice, const SliceLayout& layout);

class SliceManager {
 public:
  explicit SliceManager(SliceLayout layout);

  // Creates the root directory and the ld.so.preload file.
  Status Init();

  // Creates (or rewrites) the slice of one container. kInvalidArgument for a pod UID or
  // container name that cannot be a directory name.
  Result<SliceRecord> Create(const ContainerSlice& spec, int64_t now_unix);
  // The record Create() would make (names, paths, limits), touching nothing: the same errors.
  Result<SliceRecord> Plan(const ContainerSlice& spec, int64_t now_unix) const;

  // The slices on disk (directories whose slice.json reads back). A slice.json that did not
  // change since the last call (same inode, size and modification time) is not parsed again.
  std::vector<SliceRecord> List() const;

  Status Remove(const std::string& name);

  // Removes the slices whose pod UID is not in `live_pod_uids` and that are older than
  // `grace_seconds`. Returns the removed ones.
  std::vector<SliceRecord> CollectGarbage(const std::set<std::string>& live_pod_uids,
                                          int64_t now_unix, int64_t grace_seconds);

  const SliceLayout& layout() const { return layout_; }

 private:
  SliceLayout layout_;
  struct ParsedRecord {
    uint64_t ino = 0;
    int64_t size = 0;
    int64_t mtime_ns = 0;
    SliceRecord record;
  };
  mutable std::mutex parsed_mu_;
  mutable std::map<std::string, ParsedRecord> parsed_;  // slice.json path -> what it said
};

}  // namespace vgpu::node
