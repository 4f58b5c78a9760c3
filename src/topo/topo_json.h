// JSON form of a Topology for `vgpu topo --json` (docs/topology.md):
//   {"gpus":[{"index":0,"numa_node":0,"cpu_affinity":"0-55"}],
//    "links":[{"a":0,"b":1,"token":"NV18","nvlinks":18,"nvswitch":true,"pcie":"SYS",
//              "pcie_inferred":false,"p2p":true,"bandwidth_gbps":476.0}]}
// One entry per unordered pair (a < b); bandwidth_gbps is the model's (topo/bandwidth.h).
#pragma once

#include <string>

#include "topo/bandwidth.h"
#include "topo/topology.h"

namespace vgpu::topo {

std::string TopologyJson(const Topology& topology, const BandwidthModel& model = {});

}  // namespace vgpu::topo
