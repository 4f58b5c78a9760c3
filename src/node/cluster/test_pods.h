// Helpers for node tests: pods with assignments, in the extender's annotation format.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "device/device_backend.h"
#include "mig/profiles.h"
#include "node/cluster/cluster.h"
#include "node/plugin/assignment.h"

namespace vgpu::node::testing {

struct GpuShare {
  std::string uuid;
  uint64_t memory_mib = 1024;
  int cores = 100;
};

// A pod bound to `node` whose container `container` is assigned `gpus` (with `rank_order`: in
// that order, as for a pod with a communication pattern).
inline PodInfo PodWith(const std::string& name, const std::string& node,
                       const std::vector<GpuShare>& gpus, int64_t created = 0,
                       const std::string& container = "main", bool rank_order = false) {
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
  c.rank_order = rank_order;
  for (const GpuShare& g : gpus) {
    c.devices.push_back({g.uuid, 0, g.memory_mib << 20, g.cores});
  }
  a.containers.push_back(c);
  p.annotations[kAssignmentAnnotation] = FormatAssignment(a);
  return p;
}

// A pod placed by HAMi's scheduler: hami.io/vgpu-devices-allocated gives its only container
// `container` the `gpus` (memory in MiB, cores; 0 cores = not throttled).
inline PodInfo HamiPodWith(const std::string& name, const std::string& node,
                           const std::vector<GpuShare>& gpus, int64_t created = 0,
                           const std::string& container = "main") {
  PodInfo p;
  p.ns = "default";
  p.name = name;
  p.uid = "uid-" + name;
  p.node_name = node;
  p.phase = "Pending";
  p.created_unix = created;
  p.containers = {container};
  std::string text;
  for (const GpuShare& g : gpus) {
    text +=
        g.uuid + ",NVIDIA," + std::to_string(g.memory_mib) + "," + std::to_string(g.cores) + ":";
  }
  p.annotations[kHamiAllocatedAnnotation] = text + ";";
  p.annotations[kHamiNodeAnnotation] = node;
  p.annotations[kHamiBindTimeAnnotation] = std::to_string(created);
  return p;
}

// A pod whose container is assigned MIG instance `profile`@`start` (with its UUID, as the
// extender records an instance of a static layout) on GPU `gpu`, limited to `memory_mib` in it.
inline PodInfo MigPodWith(const std::string& name, const std::string& node, const std::string& gpu,
                          const std::string& profile, int start, const std::string& mig_uuid,
                          uint64_t memory_mib, int64_t created = 0) {
  PodInfo p = PodWith(name, node, {{gpu, memory_mib}}, created);
  PodAssignment a = *ParseAssignment(p.annotations[kAssignmentAnnotation]);
  a.containers[0].devices[0].mig = k8s::AssignedMig{profile, start, mig_uuid};
  p.annotations[kAssignmentAnnotation] = FormatAssignment(a);
  return p;
}

// The MIG profiles of a table (mig/profiles.h) as a driver reports them.
inline std::vector<device::MigProfileInfo> MigProfilesOf(std::string_view model) {
  std::vector<device::MigProfileInfo> out;
  for (const mig::Profile& p : mig::ModelByKey(model)->profiles) {
    out.push_back({p.profile_id, std::string(p.name), p.memory_slices, p.compute_slices, p.sm_count,
                   static_cast<uint64_t>(p.memory_mib) << 20, p.max_count, p.Starts(),
                   p.engines.copy, p.engines.decoder, p.engines.encoder, p.engines.jpeg,
                   p.engines.ofa});
  }
  return out;
}

}  // namespace vgpu::node::testing
