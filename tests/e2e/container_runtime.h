// A stand-in for a container runtime in end-to-end tests: what the device plugin's Allocate
// returned for a container (environment, mounts) turned into the environment of a plain process
// on this host, without namespaces, so that the test runs as any user in any CI container.
//
// A real runtime bind-mounts each mount's host path at its container path and sets the
// environment. Here the process sees the host's file system, so every path the container would
// use is translated to the host path its mount names (the mount with the longest matching
// container path), and /etc/ld.so.preload, which cannot be mounted over the host's, becomes
// LD_PRELOAD with its lines translated. Paths that the slice's region and arbiter files are
// named by are mounted at their host paths, so they need no translation (the tests check it): a
// process here names its slice in the arbiter exactly as it would inside a container.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"

namespace vgpu::e2e {

struct Mount {
  std::string container_path;
  std::string host_path;
  bool read_only = true;
};

class ContainerSpec {
 public:
  static ContainerSpec FromAllocation(const v1beta1::ContainerAllocateResponse& response);

  // The host path behind `path` in the container; `path` itself when no mount covers it.
  std::string HostPath(const std::string& path) const;
  // The mount that covers `path`, or nullptr.
  const Mount* MountOf(const std::string& path) const;

  // The environment of a process in this container: the allocation's variables (values that are
  // mounted paths translated), LD_PRELOAD from the mounted /etc/ld.so.preload (translated, with
  // `first_preload` before it when not empty: a sanitizer runtime), and `runtime_env` — what the
  // runtime itself adds (the driver libraries of the NVIDIA runtime; the simulated GPU here).
  std::vector<std::string> Environment(const std::vector<std::string>& runtime_env,
                                       const std::string& first_preload = "") const;

  std::map<std::string, std::string> envs;
  std::vector<Mount> mounts;
};

// The GPUs a container sees. The NVIDIA container runtime gives it the devices its
// NVIDIA_VISIBLE_DEVICES names (UUIDs) and no others, and CUDA inside numbers them in the node's
// order (NVML index, PCI bus order), whatever the order of the list. The simulated GPU has no
// device nodes to hide, so the same view is CUDA_VISIBLE_DEVICES with those UUIDs in the node's
// order (`node_gpus`, the node's UUIDs by index): this returns that "CUDA_VISIBLE_DEVICES=..."
// entry, for the runtime environment, or "" when the container names no GPU. UUIDs the node does
// not have are left out (the real runtime would refuse to start the container).
std::string SimGpuVisibleDevices(const ContainerSpec& container,
                                 const std::vector<std::string>& node_gpus);

}  // namespace vgpu::e2e
