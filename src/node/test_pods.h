// Helpers for node tests: pods with assignments, in the extender's annotation format.
#pragma once

#include <string>
#include <vector>

#include "node/assignment.h"
#include "node/cluster.h"

namespace vgpu::node::testing {

struct GpuShare {
  std::string uuid;
  uint64_t memory_mib = 1024;
  int cores = 100;
};

// A pod bound to `node` whose container `container` is assigned `gpus`.
inline PodInfo PodWith(const std::string& name, const std::string& node,
                       const std::vector<GpuShare>& gpus, int64_t created = 0,
                       const std::string& container = "main") {
  PodInfo p;
  p.ns = "default";
  p.name = name;
  p.uid = "uid-" + name;
  p.node_name = node;
  p.phase = "Pending";
  p.created_unix = created;
  PodAssignment a;
  a.node = node;
  ContainerAssignment c;
  c.name = container;
  c.priority = 1;
  for (const GpuShare& g : gpus) {
    c.devices.push_back({g.uuid, 0, g.memory_mib << 20, g.cores});
  }
  a.containers.push_back(c);
  p.annotations[kAssignmentAnnotation] = FormatAssignment(a);
  return p;
}

}  // namespace vgpu::node::testing
