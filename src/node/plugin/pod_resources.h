// Which container kubelet gave which device IDs, from kubelet's PodResources API (List), to
// check at PreStartContainer that the slice a container is about to start with belongs to that
// very container (see docs/node.md, "Which pod is kubelet allocating?").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::node {

struct DeviceHolding {
  std::string ns;
  std::string pod;
  std::string container;
  std::vector<std::string> device_ids;  // sorted
};

class PodResourcesSource {
 public:
  virtual ~PodResourcesSource() = default;
  // The containers that hold devices of `resource_name`. kUnavailable when kubelet's API cannot
  // be reached.
  virtual Result<std::vector<DeviceHolding>> List(const std::string& resource_name) = 0;
};

// Over gRPC on kubelet's socket (default /var/lib/kubelet/pod-resources/kubelet.sock).
std::unique_ptr<PodResourcesSource> NewKubeletPodResources(const std::string& socket_path);

}  // namespace vgpu::node
