// Topology in the extender (docs/topology.md): a node's GPU topology from its inventory, the GPU
// set a multi-GPU pod gets on a node (topo::ChooseSet among the GPUs that fit it), and node
// scores ranked by the best set each node offers.
//
// Contract (pure functions):
// - TopologyOfInventory: per pair, the inventory's optional `links` row (topo -m tokens, see
//   gpu_inventory.h) when every GPU has one, else NVLink (one link, count unknown) between
//   nvlink_peers, NODE on one NUMA node, SYS otherwise. GPU i is the inventory's i-th GPU.
//   The inventory's `pcie` (when given) sets the PCIe generation and width.
// - TopologyGpuChoice: for a request of 2 or more GPUs, the set ChooseSet picks for `pattern`
//   among the node's GPUs that fit one share of the request (sched::Cluster::GpuFits, default
//   FitOptions) and are in `usable` (the constraint filter's GPUs); `fallback` (the policy's
//   choice) for a single GPU, or when the topology does not match the node or fewer GPUs fit.
//   A request with require_nvlink gets an NVLink-connected set (ChooseOptions::require_nvlink),
//   or no GPUs (0) when none is free; its fallback is kept only when it is NVLink-connected.
//   `order` (when given) receives the rank order: rank i on GPU (*order)[i], for patterns whose
//   order matters (topo::CommPattern::OrderMatters); it is left empty otherwise (the GPUs then go
//   to the container in index order).
// - BestSetBandwidth: the ring bandwidth of that set (0 when there is none).
// - RankByTopology: for multi-GPU requests, feasible nodes are ranked first by the best set's
//   bandwidth (levels within 1% count as equal), then by the policy's raw score: each lower level
//   is moved below every node of the levels above it, the policy's order kept inside a level.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "k8s/wire/gpu_inventory.h"
#include "sched/cluster.h"
#include "topo/bandwidth.h"
#include "topo/pattern.h"

namespace vgpu::k8s {

topo::Topology TopologyOfInventory(const NodeInventory& inventory);

sched::GpuSet TopologyGpuChoice(topo::Evaluator& evaluator, const sched::Cluster& cluster,
                                sched::NodeId node, const sched::PodRequest& request,
                                sched::GpuSet fallback, const topo::CommPattern& pattern = {},
                                std::vector<int>* order = nullptr, topo::GpuMask usable = ~0u);

double BestSetBandwidth(topo::Evaluator& evaluator, const sched::Cluster& cluster,
                        sched::NodeId node, const sched::PodRequest& request);

void RankByTopology(std::vector<int64_t>* raw, std::span<const uint8_t> feasible,
                    std::span<const double> bandwidth);

}  // namespace vgpu::k8s
