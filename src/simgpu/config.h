// Device descriptions for the simulated GPU, read from a small text file or the environment.
//
// Where the devices come from (first match wins):
//   VGPU_SIMGPU_CONFIG=PATH   a config file (format below)
//   VGPU_SIMGPU_DEVICES=N     N default devices (1..kMaxDevices)
//   neither                   one default device (an H100-like 80 GiB GPU)
//
// Config file: one device per line, `key=value` pairs separated by spaces; '#' starts a comment;
// blank lines are ignored; values with spaces are double-quoted ("a \"b\"" escapes quotes).
//   model=h100|h200|a100     presets for every other key (default h100); apply before the rest;
//                             they are src/hw's models with a SimPreset (hw/gpu_models_table.h)
//   name="..."                product name; default "vgpu simulated <MODEL> (<N> GiB)"
//   memory=80GiB              device memory (sizes as in common/units.h)
//   sms=132                   multiprocessor count
//   cc=9.0                    compute capability major.minor
//   clock_mhz=1980 memory_clock_mhz=2619 bus_width=5120 l2=50MiB power_w=700
//   uuid=GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx   default: stable, derived from index and name
//   pci=0000:18:00.0          PCI domain:bus:device.function (function must be 0)
//   kernel_time=10us          duration of a kernel that does not state its own (see docs)
//   context_memory=0          device memory each context takes
//   h2d_bandwidth=55GB/s d2h_bandwidth=55GB/s   host link per direction (rates as in
//                             common/units.h; 0: copies are instant); a100 25GB/s
//   fault_latency=20us        managed memory: the service time of one far fault (0..1s), on top
//                             of the page's transfer at h2d_bandwidth (driver/managed.cc)
//   link_coupling=70          percent of a direction's bandwidth kept while the other direction
//                             copies too (1..100; timeline.h)
//   mig=on|off                MIG mode at start (default off; see mig_state.h)
//   mig_layout=3g.71gb@0,1g.18gb@4   GPU instances at start (PROFILE@START, comma-separated),
//                             each with one compute instance over all its slices; needs mig=on
//   pcie_gen=5 pcie_width=16  the PCIe link NVML reports (nvmlDevice{Max,Curr}PcieLink*);
//                             default: the topology's, else h100/h200 Gen5, a100 Gen4, x16
// A line `topology=NAME|PATH` (alone on its line, not a device) gives the GPUs' topology: a preset
// of src/topo/presets.h or a saved `nvidia-smi topo -m` file; VGPU_SIMGPU_TOPOLOGY=NAME|PATH does
// the same from the environment (the config file's line wins), and without a config file or
// VGPU_SIMGPU_DEVICES the device count is the topology's. The count must match the topology's.
// Without a topology the simulated NVML reports no NVLink and no topology (NOT_SUPPORTED).
//
// Errors name the file, line and column. Thread safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "topo/topology.h"

namespace vgpu::simgpu {

inline constexpr int kMaxDevices = 16;

struct DeviceSpec {
  std::string model;  // "h100", "h200", "a100"
  std::string name;
  uint64_t memory_bytes = 0;
  int sm_count = 0;
  int cc_major = 0;
  int cc_minor = 0;
  int clock_mhz = 0;
  int memory_clock_mhz = 0;
  int bus_width_bits = 0;
  uint64_t l2_bytes = 0;
  int power_w = 0;
  uint32_t pci_device_id = 0;  // PCI device id << 16 | vendor id (0x10de), as NVML reports it
  std::string uuid;            // "GPU-" + 8-4-4-4-12 lower-case hex digits
  std::array<uint8_t, 16> uuid_bytes{};
  uint32_t pci_domain = 0;
  uint32_t pci_bus = 0;
  uint32_t pci_device = 0;
  uint64_t kernel_ns = 0;
  uint64_t context_bytes = 0;
  uint64_t h2d_bytes_per_s = 0;  // 0: instant copies
  uint64_t d2h_bytes_per_s = 0;
  uint32_t link_coupling_pct = 100;
  uint64_t fault_latency_ns = 20'000;  // per-process UVM model only: not part of Hash()
  bool mig_enabled = false;
  std::string mig_layout;
  int pcie_generation = 0;  // 0: the topology's, else the model's (h100/h200 5, a100 4)
  int pcie_width = 0;       // 0: the topology's, else 16
};

struct Config {
  std::vector<DeviceSpec> devices;
  std::string source;  // where it came from, for messages: a path, "VGPU_SIMGPU_DEVICES=2", ...
  std::string topology_spec;  // preset name or topo -m path; empty: no topology
  bool has_topology = false;
  topo::Topology topology;  // when has_topology: one GPU per device

  // A stable 64-bit digest of every device field: processes with equal configs share state.
  uint64_t Hash() const;
};

// The preset for `model` ("h100", "h200", "a100": hw::FindSimPreset) as device number `index`,
// with the default name, UUID and PCI address filled in. Unknown models fall back to h100.
DeviceSpec DefaultDevice(int index, std::string_view model = "h100");

// Parses config text; `file_name` is used in error messages ("file:line:column: ...").
Result<Config> ParseConfigText(std::string_view text, std::string_view file_name);

// A preset by name, else a saved `nvidia-smi topo -m` file at that path.
Result<topo::Topology> LoadTopologySpec(const std::string& spec);

// Loads `spec` (a preset name or a saved `nvidia-smi topo -m` path) into config->topology and
// checks it has one GPU per device; `where` prefixes messages.
Status ApplyTopology(Config* config, const std::string& spec, const std::string& where);

// Reads the configuration from the environment as described above.
Result<Config> LoadConfigFromEnvironment();

// Formats 16 bytes as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
std::string FormatUuid(const std::array<uint8_t, 16>& bytes);
// Parses the form FormatUuid writes (the "GPU-" prefix is required); false if malformed.
bool ParseUuid(std::string_view text, std::array<uint8_t, 16>* bytes);

// 64-bit FNV-1a.
uint64_t Fnv1a(std::string_view data, uint64_t seed = 0xcbf29ce484222325ULL);

}  // namespace vgpu::simgpu
