// Which pod and container a host process belongs to, read from /proc/<pid>/cgroup (the node
// daemon runs with hostPID, so NVML's pids are host pids). Kubernetes puts each container in a
// cgroup whose path holds "pod<pod uid>" (with '_' for '-' under the systemd driver) and ends
// with the container's runtime ID ("cri-containerd-<id>.scope", "docker-<id>.scope",
// "crio-<id>.scope" or just "<id>").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vgpu::node {

struct ProcessOwner {
  std::string pod_uid;       // with dashes
  std::string container_id;  // hex runtime ID; empty when the path does not end with one
};

// Parses the text of a /proc/<pid>/cgroup file.
std::optional<ProcessOwner> ParseCgroupOwner(const std::string& cgroup_text);

// Reads <proc_root>/<pid>/cgroup.
std::optional<ProcessOwner> OwnerOfProcess(const std::string& proc_root, uint32_t pid);

}  // namespace vgpu::node
