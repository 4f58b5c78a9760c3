// Daemon options for tests: every path under `root` (kubelet's directory `root`/kubelet, the
// slices, libvgpu.so, the arbiters), no metrics server, registration retried every 100 ms, pods
// listed on demand only.
#pragma once

#include <string>

#include "node/daemon.h"

namespace vgpu::node::testing {

inline DaemonOptions TestDaemonOptions(const std::string& root, const std::string& node_name,
                                       int units_per_gpu) {
  DaemonOptions o;
  o.node_name = node_name;
  o.units_per_gpu = units_per_gpu;
  o.plugin.kubelet_dir = root + "/kubelet";
  o.plugin.retry_ms = 100;
  o.slices.root = root + "/slices";
  o.slices.host_libvgpu = root + "/libvgpu.so";
  o.slices.arbiter_dir = root + "/arbiter";
  o.metrics_listen = "";
  o.pod_refresh_ms = 3'600'000;
  o.version = "test";
  return o;
}

}  // namespace vgpu::node::testing
