// The GPU models vgpu knows, described once: their keys and names, memory, SMs, data-sheet
// figures, PCI device ids, MIG capability and the simulated GPU's preset of them. The table
// itself, with the source of every figure, is src/hw/gpu_models_table.h.
//
// Contract:
// - Every model has one key, unique and lower case ("h100-80gb"); for the models `vgpu estimate`
//   lists (GpuModel::estimate) it is the estimator's `--gpu` key. Its NVML names are unique across
//   the table, as are its PCI device ids, and so are the simulated GPU's preset names.
// - A figure that is not recorded is 0 (or empty); nothing is filled in from a neighbour.
// - memory_mib is the total memory the driver reports for the model (nvidia-smi, NVML,
//   cudaMemGetInfo), the figure MIG's exact identification compares against. Two users keep
//   figures of their own where theirs differ from it, named apart so that no output changes:
//   estimate_memory_mib (the estimator's) and SimPreset::memory_mib (the simulated device's);
//   0 in either means memory_mib. gpu_models_table.h says where each comes from.
// - mig_table names the model's MIG profile table in src/mig (mig::ModelByKey), empty when it has
//   none; mig_capable without a mig_table is a MIG-capable model vgpu has no documented profile
//   sizes for (it gets no MIG offers; mig::UntabledModels says why).
// - The lookups match exactly (a key, case-insensitive; a preset name as the simulated GPU's
//   configuration spells it) or return nullptr: no shorthand, no family match.
// Pure data and functions: no I/O, no allocation, no exceptions; usable from any process,
// including the simulated GPU's libcuda.so.1 and libnvidia-ml.so.1.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace vgpu::hw {

// The simulated GPU's preset of a model (src/simgpu/config.cc; `model=h100` in its
// configuration, docs/simgpu.md).
struct SimPreset {
  std::string_view model = {};  // "h100": the configuration's model= value
  std::string_view label = {};  // "H100": the default name is "vgpu simulated <label> (<N> GiB)"
  std::string_view name = {};   // "vgpu simulated H100 (80 GiB)": that name at the preset's memory
  int64_t memory_mib = 0;       // the simulated device's memory; 0: the model's memory_mib
  uint64_t host_link_bytes_per_s = 0;  // the modelled host link, each direction (h2d, d2h)
};

struct GpuModel {
  std::string_view key = {};                          // "h100-80gb"
  std::string_view display = {};                      // "NVIDIA H100 80GB HBM3 (SXM5)"
  std::span<const std::string_view> nvml_names = {};  // exact names NVML reports for it
  // nvmlPciInfo_t.pciDeviceId (device id << 16 | vendor 0x10DE); the first is the one the
  // simulated GPU's preset reports.
  std::span<const uint32_t> pci_device_ids = {};
  int64_t memory_mib = 0;           // total memory as the driver reports it, MiB
  int sm_count = 0;                 // SMs of the whole GPU
  bool estimate = false;            // listed by `vgpu estimate` (KnownGpus, --list-gpus, --gpu)
  int64_t estimate_memory_mib = 0;  // the estimator's figure where it differs; 0: memory_mib
  bool mig_capable = false;
  std::string_view mig_table = {};  // its MIG table's key in src/mig ("H100-80GB"); empty: none
  // Data-sheet figures, recorded for the models the simulated GPU presents.
  int cc_major = 0;
  int cc_minor = 0;
  int clock_mhz = 0;               // SM clock, max
  int memory_clock_mhz = 0;        // memory clock, max
  int bus_width_bits = 0;          // memory bus width
  int64_t l2_mib = 0;              // L2 cache
  int power_w = 0;                 // power limit
  int pcie_generation = 0;         // the host link's PCIe generation
  const SimPreset* sim = nullptr;  // the simulated GPU's preset of it, if it has one

  int64_t EstimateMemoryMib() const {
    return estimate_memory_mib != 0 ? estimate_memory_mib : memory_mib;
  }
  // The simulated device's memory (only for a model with a preset).
  int64_t SimMemoryMib() const {
    return sim != nullptr && sim->memory_mib != 0 ? sim->memory_mib : memory_mib;
  }
  // The PCI device id the simulated GPU's preset reports.
  uint32_t SimPciDeviceId() const { return pci_device_ids.empty() ? 0 : pci_device_ids[0]; }
};

// Every model, in the table's fixed order (the estimator lists its models in this order).
std::span<const GpuModel> AllGpuModels();

// By key, case-insensitive, exact ("h100-80gb", "H100-80GB"); nullptr if unknown.
const GpuModel* FindGpuModel(std::string_view key);

// By the simulated GPU's preset name, exact ("h100"); nullptr if no model has that preset.
const GpuModel* FindSimPreset(std::string_view model);

}  // namespace vgpu::hw
