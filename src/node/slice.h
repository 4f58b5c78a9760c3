// Slices on the host: one directory per container that got GPU units, created at Allocate and
// removed when its pod is gone. The node daemon owns the root directory (--slice-dir).
//
//   <root>/ld.so.preload             one line: the container path of libvgpu.so
//   <root>/<pod uid>_<container>/
//     slice.json                     what the slice is (pod, container, devices, limits); host only
//     limits                         the read-only limits file (0444), mounted at /etc/vgpu/limits
//     shared/                        mounted read-write at /usr/local/vgpu/shared; holds `region`,
//                                    the slice's accounting region that libvgpu.so maps
//
// The limits file uses libvgpu.so's key=value format (memory.<i>, cores.<i>, uuid.<i>, priority,
// region); <i> is the CUDA index inside the container, i.e. the position in
// NVIDIA_VISIBLE_DEVICES. Files are written to a temporary name and renamed, so a reader never
// sees half a file. Create() is idempotent: a repeated Allocate for the same container rewrites
// the same content.
//
// Thread safety: Create/Remove of different slices run concurrently without a shared lock
// (each touches only its own directory); CollectGarbage may run concurrently with Create (a
// slice younger than the grace period is never collected).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::node {

// Where things are on the host and in the container.
struct SliceLayout {
  std::string root = "/var/lib/vgpu/slices";
  std::string host_libvgpu = "/usr/local/vgpu/libvgpu.so";
  std::string container_libvgpu = "/usr/local/vgpu/libvgpu.so";
  std::string container_limits = "/etc/vgpu/limits";
  std::string container_shared_dir = "/usr/local/vgpu/shared";
  bool preload = true;  // mount <root>/ld.so.preload at /etc/ld.so.preload
};

struct SliceDevice {
  std::string uuid;
  int node_index = 0;  // NVML index on the node
  int unit = 0;
  uint64_t memory_bytes = 0;
  int cores = 100;  // percent
};

struct SliceSpec {
  std::string pod_ns;
  std::string pod_name;
  std::string pod_uid;
  std::string container;
  int priority = -1;                 // 0 high, 1 low, -1 not given
  std::vector<SliceDevice> devices;  // in CUDA index order inside the container
};

struct SliceRecord {
  SliceSpec spec;
  std::string name;         // "<pod uid>_<container>"
  std::string dir;          // host path of the slice directory
  std::string limits_path;  // host path of the limits file
  std::string region_path;  // host path of the accounting region
  int64_t created_unix = 0;
};

// What kubelet is told to give the container.
struct ContainerAllocation {
  struct Mount {
    std::string container_path;
    std::string host_path;
    bool read_only = true;
  };
  std::map<std::string, std::string> envs;
  std::vector<Mount> mounts;
  std::map<std::string, std::string> annotations;
};

// Text of the limits file for `spec`.
std::string LimitsFileText(const SliceSpec& spec, const SliceLayout& layout);

// Environment, mounts and annotations for a container that owns `slice`: libvgpu.so preloaded,
// the limits file read-only, the shared directory read-write, NVIDIA_VISIBLE_DEVICES, and the
// HAMi-core variables (CUDA_DEVICE_MEMORY_LIMIT_<i>, CUDA_DEVICE_SM_LIMIT[_<i>],
// CUDA_DEVICE_MEMORY_SHARED_CACHE, CUDA_TASK_PRIORITY) plus VGPU_LIMITS_FILE.
ContainerAllocation BuildAllocation(const SliceRecord& slice, const SliceLayout& layout);

class SliceManager {
 public:
  explicit SliceManager(SliceLayout layout);

  // Creates the root directory and the ld.so.preload file.
  Status Init();

  // Creates (or rewrites) the slice of one container. kInvalidArgument for a pod UID or
  // container name that cannot be a directory name.
  Result<SliceRecord> Create(const SliceSpec& spec, int64_t now_unix);

  // The slices on disk (directories whose slice.json reads back).
  std::vector<SliceRecord> List() const;

  Status Remove(const std::string& name);

  // Removes the slices whose pod UID is not in `live_pod_uids` and that are older than
  // `grace_seconds`. Returns the removed ones.
  std::vector<SliceRecord> CollectGarbage(const std::set<std::string>& live_pod_uids,
                                          int64_t now_unix, int64_t grace_seconds);

  const SliceLayout& layout() const { return layout_; }

 private:
  SliceLayout layout_;
};

}  // namespace vgpu::node
