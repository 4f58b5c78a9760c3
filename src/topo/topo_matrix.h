// The `nvidia-smi topo -m` text format: printing a Topology as nvidia-smi does, and reading a
// saved output back (what users paste).
//
// Printed form (tabs as nvidia-smi writes them, then its legend):
//   \tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
//   GPU0\t X \tNV12\t0-31\t0\t\tN/A
//
// Reading accepts what real outputs contain: tabs or runs of spaces, ANSI colour codes, NIC and
// mlx5_N columns and rows (ignored), the older header without "NUMA Affinity"/"GPU NUMA ID", the
// legend or none, and text before the header (a shell prompt). It rejects, naming
// file:line:column: a ragged row (fewer or more link cells than the header has columns), an
// unknown link token, "X" off the diagonal, GPU rows missing or out of order, and an asymmetric
// matrix (cell and its mirror disagree).
//
// What the text does not carry is inferred, and marked (PairLink::pcie_inferred): the PCIe level
// of an NV# pair (NODE on one NUMA node, else SYS), NVSwitch (a GPU whose NV# counts add up to
// more than kMaxNvLinksPerGpu reaches its peers through a switch), and P2P (assumed supported).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "topo/topology.h"

namespace vgpu::topo {

// The matrix and legend, byte for byte as `nvidia-smi topo -m` prints them for GPUs only.
std::string FormatTopoMatrix(const Topology& topology);

// Parses a saved output; `file_name` is used in messages.
Result<Topology> ParseTopoMatrix(std::string_view text, std::string_view file_name);

// True when both print the same matrix cell for cell, with the same NUMA nodes, CPU affinities
// and NVSwitch attribution (what a saved output can tell).
bool SameMatrix(const Topology& a, const Topology& b);

}  // namespace vgpu::topo
