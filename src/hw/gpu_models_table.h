// The one table of GPU models (the types and their contract: gpu_models.h). Visible as constexpr
// data so that other tables (src/mig's profile tables) refer to their model at compile time.
//
// Where the figures come from (each as the file it came from cited it):
// - NVML names and PCI device ids: NVIDIA/mig-parted config-default.yaml device filters and
//   pci.ids (formerly beside src/mig's profile tables); the models `vgpu estimate` alone knows
//   have none recorded.
// - memory_mib: for the models with a MIG table, NVML's total memory of the GPU (docs/mig.md's
//   model table; the GH200's 97871 MiB from the published -lgip log its MIG table cites); for the
//   others, total memory as nvidia-smi / cudaMemGetInfo report it (the estimator's list,
//   formerly src/estimate/gpus.cc).
// - estimate_memory_mib: the estimator's list where it differs from NVML's total: only the
//   A100 40GB, 40960 MiB there (40 GiB) against NVML's 40536 MiB in the MIG table. Both are kept
//   as they were so that neither `vgpu estimate` nor MIG identification changes.
// - sm_count: NVIDIA's data sheets (the estimator's list) and the published `nvidia-smi mig -lgip`
//   outputs of the MIG tables (the whole-GPU figure: H100 PCIe 114, H100 SXM5 132, A100 108);
//   where both had a model they agree.
// - cc, clocks, bus width, L2, power limit: the simulated GPU's presets (formerly
//   src/simgpu/config.cc, docs/simgpu.md), the data-sheet class figures of an H100 SXM5, an H200
//   SXM and an A100 SXM4 80GB; their file named no further source. pcie_generation: the same
//   presets' default link (Gen5 for H100 and H200, Gen4 for A100; src/simgpu/nvml).
// - SimPreset: the simulated GPU's presets. Its memory is 80 GiB for h100 (81920 MiB, a round
//   size, where the H100 SXM5 reports 81559) and the model's own for h200 and a100; the host link
//   is 55 GB/s each way for h100 and h200 (copy-engine figures of PCIe Gen5 x16) and 25 GB/s for
//   a100 (Gen4; nvbandwidth measured 25 GB/s H2D alone on an A100 SXM; docs/simgpu.md).
// - mig_capable: the MIG user guide's "Supported GPUs"; mig_table: a table whose every profile
//   size is documented (src/mig/profiles_tables.cc names the sources, docs/mig.md).
#pragma once

#include "hw/gpu_models.h"

namespace vgpu::hw {
namespace table {

inline constexpr std::string_view kA30Names[] = {"NVIDIA A30"};
inline constexpr uint32_t kA30Pci[] = {0x20B710DE};
inline constexpr std::string_view kA100_40Names[] = {"NVIDIA A100-SXM4-40GB",
                                                     "NVIDIA A100-PCIE-40GB"};
inline constexpr uint32_t kA100_40Pci[] = {0x20B010DE, 0x20B110DE, 0x20F110DE};
inline constexpr std::string_view kA100_80Names[] = {"NVIDIA A100-SXM4-80GB",
                                                     "NVIDIA A100 80GB PCIe"};
inline constexpr uint32_t kA100_80Pci[] = {0x20B210DE, 0x20B510DE};
inline constexpr std::string_view kH100_80Names[] = {"NVIDIA H100 80GB HBM3"};
inline constexpr uint32_t kH100_80Pci[] = {0x233010DE};
inline constexpr std::string_view kH100_PCIeNames[] = {"NVIDIA H100 PCIe"};
inline constexpr uint32_t kH100_PCIePci[] = {0x233110DE};
inline constexpr std::string_view kH100_NVLNames[] = {"NVIDIA H100 NVL"};
inline constexpr uint32_t kH100_NVLPci[] = {0x232110DE};
inline constexpr std::string_view kH200Names[] = {"NVIDIA H200"};
inline constexpr uint32_t kH200Pci[] = {0x233510DE};
inline constexpr std::string_view kGH200_96Names[] = {"NVIDIA GH200 480GB"};
inline constexpr uint32_t kGH200_96Pci[] = {0x234210DE};
inline constexpr std::string_view kH200NvlNames[] = {"NVIDIA H200 NVL"};
inline constexpr std::string_view kGH200_144Names[] = {"NVIDIA GH200 144G HBM3e"};
inline constexpr uint32_t kGH200_144Pci[] = {0x234810DE};
inline constexpr std::string_view kB200Names[] = {"NVIDIA B200"};
inline constexpr uint32_t kB200Pci[] = {0x290110DE};
inline constexpr std::string_view kGB200Names[] = {"NVIDIA GB200"};
inline constexpr uint32_t kGB200Pci[] = {0x294110DE};
inline constexpr uint32_t kB300Pci[] = {0x318210DE};
inline constexpr uint32_t kGB300Pci[] = {0x31C210DE};
inline constexpr std::string_view kH100Sxm94Names[] = {"NVIDIA H100"};
inline constexpr std::string_view kH20Names[] = {"NVIDIA H20"};
inline constexpr uint32_t kH20Pci[] = {0x232910DE};
inline constexpr std::string_view kRtxProNames[] = {"NVIDIA RTX PRO 6000 Blackwell Server Edition"};
inline constexpr uint32_t kRtxProPci[] = {0x2BB510DE};

inline constexpr SimPreset kSimH100 = {.model = "h100",
                                       .label = "H100",
                                       .name = "vgpu simulated H100 (80 GiB)",
                                       .memory_mib = 81920,
                                       .host_link_bytes_per_s = 55'000'000'000};
inline constexpr SimPreset kSimH200 = {.model = "h200",
                                       .label = "H200",
                                       .name = "vgpu simulated H200 (140 GiB)",
                                       .memory_mib = 0,
                                       .host_link_bytes_per_s = 55'000'000'000};
inline constexpr SimPreset kSimA100 = {.model = "a100",
                                       .label = "A100",
                                       .name = "vgpu simulated A100 (80 GiB)",
                                       .memory_mib = 0,
                                       .host_link_bytes_per_s = 25'000'000'000};

}  // namespace table

// The order: the estimator's models by memory as it listed them, the other MIG-tabled models
// beside their kin, then the MIG-capable models without a table in src/mig's order.
inline constexpr GpuModel kGpuModels[] = {
    {.key = "t4", .display = "NVIDIA T4", .memory_mib = 15360, .sm_count = 40, .estimate = true},
    {.key = "a10g",
     .display = "NVIDIA A10G",
     .memory_mib = 23028,
     .sm_count = 80,
     .estimate = true},
    {.key = "l4", .display = "NVIDIA L4", .memory_mib = 23034, .sm_count = 58, .estimate = true},
    {.key = "rtx-4090",
     .display = "NVIDIA GeForce RTX 4090",
     .memory_mib = 24564,
     .sm_count = 128,
     .estimate = true},
    {.key = "a30",
     .display = "NVIDIA A30 24GB",
     .nvml_names = table::kA30Names,
     .pci_device_ids = table::kA30Pci,
     .memory_mib = 24576,
     .sm_count = 56,
     .mig_capable = true,
     .mig_table = "A30"},
    {.key = "v100-32gb",
     .display = "NVIDIA V100 32GB",
     .memory_mib = 32768,
     .sm_count = 80,
     .estimate = true},
    {.key = "a100-40gb",
     .display = "NVIDIA A100 40GB (SXM4, PCIe)",
     .nvml_names = table::kA100_40Names,
     .pci_device_ids = table::kA100_40Pci,
     .memory_mib = 40536,
     .sm_count = 108,
     .estimate = true,
     .estimate_memory_mib = 40960,
     .mig_capable = true,
     .mig_table = "A100-40GB"},
    {.key = "l40s",
     .display = "NVIDIA L40S",
     .memory_mib = 46068,
     .sm_count = 142,
     .estimate = true},
    {.key = "a6000",
     .display = "NVIDIA RTX A6000",
     .memory_mib = 49140,
     .sm_count = 84,
     .estimate = true},
    {.key = "a100-80gb",
     .display = "NVIDIA A100 80GB (SXM4, PCIe)",
     .nvml_names = table::kA100_80Names,
     .pci_device_ids = table::kA100_80Pci,
     .memory_mib = 81920,
     .sm_count = 108,
     .estimate = true,
     .mig_capable = true,
     .mig_table = "A100-80GB",
     .cc_major = 8,
     .cc_minor = 0,
     .clock_mhz = 1410,
     .memory_clock_mhz = 1593,
     .bus_width_bits = 5120,
     .l2_mib = 40,
     .power_w = 400,
     .pcie_generation = 4,
     .sim = &table::kSimA100},
    {.key = "h100-80gb",
     .display = "NVIDIA H100 80GB HBM3 (SXM5)",
     .nvml_names = table::kH100_80Names,
     .pci_device_ids = table::kH100_80Pci,
     .memory_mib = 81559,
     .sm_count = 132,
     .estimate = true,
     .mig_capable = true,
     .mig_table = "H100-80GB",
     .cc_major = 9,
     .cc_minor = 0,
     .clock_mhz = 1980,
     .memory_clock_mhz = 2619,
     .bus_width_bits = 5120,
     .l2_mib = 50,
     .power_w = 700,
     .pcie_generation = 5,
     .sim = &table::kSimH100},
    {.key = "h100-pcie",
     .display = "NVIDIA H100 PCIe 80GB",
     .nvml_names = table::kH100_PCIeNames,
     .pci_device_ids = table::kH100_PCIePci,
     .memory_mib = 81559,
     .sm_count = 114,
     .mig_capable = true,
     .mig_table = "H100-PCIe"},
    {.key = "h100-nvl",
     .display = "NVIDIA H100 NVL 94GB",
     .nvml_names = table::kH100_NVLNames,
     .pci_device_ids = table::kH100_NVLPci,
     .memory_mib = 95830,
     .sm_count = 132,
     .mig_capable = true,
     .mig_table = "H100-NVL"},
    {.key = "gh200-96gb",
     .display = "NVIDIA GH200 480GB (96GB HBM3)",
     .nvml_names = table::kGH200_96Names,
     .pci_device_ids = table::kGH200_96Pci,
     .memory_mib = 97871,
     .sm_count = 132,
     .mig_capable = true,
     .mig_table = "GH200-96GB"},
    {.key = "h200",
     .display = "NVIDIA H200 141GB (SXM5)",
     .nvml_names = table::kH200Names,
     .pci_device_ids = table::kH200Pci,
     .memory_mib = 143771,
     .sm_count = 132,
     .estimate = true,
     .mig_capable = true,
     .mig_table = "H200",
     .cc_major = 9,
     .cc_minor = 0,
     .clock_mhz = 1980,
     .memory_clock_mhz = 3201,
     .bus_width_bits = 6144,
     .l2_mib = 50,
     .power_w = 700,
     .pcie_generation = 5,
     .sim = &table::kSimH200},
    // MIG-capable, without a table (src/mig/profiles_tables.cc's UntabledModels says why).
    {.key = "h200-nvl",
     .display = "NVIDIA H200 NVL",
     .nvml_names = table::kH200NvlNames,
     .mig_capable = true},
    {.key = "gh200-144gb",
     .display = "NVIDIA GH200 144G HBM3e",
     .nvml_names = table::kGH200_144Names,
     .pci_device_ids = table::kGH200_144Pci,
     .mig_capable = true},
    {.key = "b200",
     .display = "NVIDIA B200",
     .nvml_names = table::kB200Names,
     .pci_device_ids = table::kB200Pci,
     .mig_capable = true},
    {.key = "gb200",
     .display = "NVIDIA GB200",
     .nvml_names = table::kGB200Names,
     .pci_device_ids = table::kGB200Pci,
     .mig_capable = true},
    {.key = "b300",
     .display = "NVIDIA B300",
     .pci_device_ids = table::kB300Pci,
     .mig_capable = true},
    {.key = "gb300",
     .display = "NVIDIA GB300",
     .pci_device_ids = table::kGB300Pci,
     .mig_capable = true},
    {.key = "h100-sxm5-94gb",
     .display = "NVIDIA H100 SXM5 94GB",
     .nvml_names = table::kH100Sxm94Names,
     .mig_capable = true},
    {.key = "h20",
     .display = "NVIDIA H20",
     .nvml_names = table::kH20Names,
     .pci_device_ids = table::kH20Pci,
     .mig_capable = true},
    {.key = "rtx-pro-6000-blackwell",
     .display = "NVIDIA RTX PRO 6000 Blackwell",
     .nvml_names = table::kRtxProNames,
     .pci_device_ids = table::kRtxProPci,
     .mig_capable = true},
};

// The model of `key` (exact, case-sensitive), for tables that refer to a model at compile time;
// nullptr when not found, so that a constexpr initializer dereferencing it does not compile.
constexpr const GpuModel* ModelOfKey(std::string_view key) {
  for (const GpuModel& m : kGpuModels) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

}  // namespace vgpu::hw
