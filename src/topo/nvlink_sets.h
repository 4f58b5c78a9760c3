// NVLink-connected GPU sets: what a pod annotated `vgpu.io/topology: require-nvlink` must get
// (docs/topology.md, "Requiring NVLink").
//
// Definition: a set of k >= 2 GPUs is NVLink-connected when its GPUs can be ordered in a ring
// whose every hop is an NVLink (direct, or through NVSwitch): for k = 2 the pair is joined by
// NVLink, for k >= 3 the NVLink graph of the set has a Hamiltonian cycle. That is the ring NCCL
// runs collectives on (topo/bandwidth.h models one ring), so no hop of it falls back to PCIe.
// A single GPU is not a set (requiring NVLink for it is refused where the annotation is read).
//
// Pure functions on adjacency masks (bit b of adjacency[a]: GPUs a and b are joined by NVLink);
// exact for up to 32 GPUs (a depth-first cycle search, bounded by the masks).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "topo/bandwidth.h"

namespace vgpu::topo {

inline constexpr std::string_view kTopologyAnnotation = "vgpu.io/topology";
inline constexpr std::string_view kRequireNvlink = "require-nvlink";

// The annotation's value: "require-nvlink" (true), "" (false). kInvalidArgument for anything else,
// naming the annotation and the values it takes.
Result<bool> ParseTopologyAnnotation(std::string_view value);

// Per GPU, the GPUs it shares an NVLink with.
std::vector<GpuMask> NvlinkAdjacency(const Topology& topology);

// Whether `set` (2 or more GPUs) is NVLink-connected.
bool NvlinkConnected(std::span<const GpuMask> adjacency, GpuMask set);

// A k-subset of `candidates` that is NVLink-connected (the one with the lowest GPU indices found
// first by the search), or 0 when there is none or k < 2.
GpuMask FindNvlinkSet(std::span<const GpuMask> adjacency, GpuMask candidates, int k);

}  // namespace vgpu::topo
