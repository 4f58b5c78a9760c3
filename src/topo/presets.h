// Topology presets: the server shapes vgpu is tested and benchmarked on, each from a public
// `nvidia-smi topo -m` matrix or a public test fixture (docs/topology.md names the sources).
//
//   hgx-h200        8 x H200 SXM, NV18 to every peer through NVSwitch; GPUs 0-3 on NUMA 0, 4-7 on 1
//   dgx-a100        8 x A100 SXM, NV12 through NVSwitch; GPU pairs on NUMA 3, 1, 7, 5
//   dgx1-volta      8 x V100 SXM2, hybrid cube-mesh of NV1 and NV2 links (go-gpuallocator fixture)
//   pcie4-nvbridge  4 x A100 PCIe, NVLink bridges (NV12) join 0-1 and 2-3, SYS across
//   pcie8-2socket   8 PCIe GPUs, NODE inside a socket (0-3, 4-7), SYS across
//   pcie8-switch    8 PCIe GPUs behind PCIe switches: PIX in a switch pair, PXB in a socket, SYS
//   across dgx2            16 x V100, NV6 to every peer through NVSwitch (decision-time benchmark)
//   pcie16-switch   16 PCIe GPUs: 4 switches of 4 (PIX), PXB in a socket, SYS across
//   rtx8000x4       4 x RTX 8000, NV2 bridges 0-3 and 1-2 (go-gpuallocator fixture)
//   dgx1-pascal     8 x P100, NV1 cube-mesh (go-gpuallocator fixture)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topo/topology.h"

namespace vgpu::topo {

// The preset names in the order above.
std::vector<std::string> PresetNames();
// The six server shapes of the benchmark (the first six names).
std::vector<std::string> ServerPresetNames();
// The preset, or nullopt for an unknown name.
std::optional<Topology> Preset(std::string_view name);

}  // namespace vgpu::topo
