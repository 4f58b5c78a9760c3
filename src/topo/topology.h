// Topology: how the GPUs of one node are joined, pair by pair, as NVML reports it.
//
// For every ordered pair of GPUs (a, b), a != b:
// - the PCIe common-ancestor level (nvmlDeviceGetTopologyCommonAncestor: INTERNAL, SINGLE (PIX),
//   MULTIPLE (PXB), HOSTBRIDGE (PHB), NODE, SYSTEM (SYS));
// - the number of NVLinks that join them, directly (the link's remote PCI device is the peer) or
//   through NVSwitch (the link's remote device type is SWITCH; then the pair gets the smaller of
//   the two GPUs' switch link counts, as NVML's own `nvidia-smi topo -m` shows it);
// - whether peer-to-peer access works (nvmlDeviceGetP2PStatus, read index).
// Per GPU: the NUMA node and the CPU affinity text (for printing only).
//
// A Topology is a value: copyable, comparable, no I/O. Valid() says whether it is symmetric.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vgpu::topo {

// NVML's nvmlGpuTopologyLevel_t values (the gaps are NVML's).
enum class PcieLevel : int {
  kInternal = 0,     // same board (e.g. the two GPUs of a K80)
  kSingle = 10,      // PIX: at most one PCIe bridge
  kMultiple = 20,    // PXB: several PCIe bridges, no host bridge
  kHostBridge = 30,  // PHB: through a PCIe host bridge (the CPU)
  kNode = 40,        // NODE: between host bridges of one NUMA node
  kSystem = 50,      // SYS: across NUMA nodes (QPI/UPI/xGMI)
};

// The `nvidia-smi topo -m` token of a level: "PIX", "PXB", "PHB", "NODE", "SYS"; "PIX" is also
// what nvidia-smi prints for INTERNAL.
std::string_view PcieLevelToken(PcieLevel level);
// The inverse for the five PCIe tokens; false for anything else.
bool ParsePcieLevelToken(std::string_view token, PcieLevel* level);

// The most NVLinks one GPU has (NVLink4: 18). A GPU whose NV# counts to its peers add up to more
// than this cannot be linked directly to all of them: its links go through NVSwitch.
inline constexpr int kMaxNvLinksPerGpu = 18;

struct PairLink {
  PcieLevel pcie = PcieLevel::kSystem;
  int nvlinks = 0;            // NVLinks joining the pair (direct, or through NVSwitch)
  bool via_nvswitch = false;  // the links go through NVSwitch (the remote device is a switch)
  bool p2p = true;            // peer-to-peer reads work
  // The PCIe level was not measured but inferred (a parsed `topo -m` shows NV# instead of the
  // PCIe level for NVLink pairs; the level is then NODE on one NUMA node and SYS across).
  bool pcie_inferred = false;

  bool operator==(const PairLink&) const = default;
};

struct GpuPlace {
  int numa_node = -1;        // -1: unknown
  std::string cpu_affinity;  // "0-55,112-167"; empty: unknown
  bool operator==(const GpuPlace&) const = default;
};

class Topology {
 public:
  Topology() = default;
  explicit Topology(int gpu_count);

  int size() const { return static_cast<int>(gpus_.size()); }
  const PairLink& Link(int a, int b) const { return links_[Index(a, b)]; }
  // Sets both (a, b) and (b, a).
  void SetLink(int a, int b, const PairLink& link);
  // Sets one direction only (for building from per-GPU NVML answers, then checked by Valid()).
  void SetDirected(int a, int b, const PairLink& link) { links_[Index(a, b)] = link; }
  const GpuPlace& Gpu(int index) const { return gpus_[index]; }
  GpuPlace& MutableGpu(int index) { return gpus_[index]; }

  // "" when every pair agrees in both directions, else a message naming the first pair that
  // does not ("GPU1->GPU3 is NV2 but GPU3->GPU1 is SYS").
  std::string Asymmetry() const;
  // The `topo -m` token of a pair: "NV12" or the PCIe token.
  std::string Token(int a, int b) const;

  // PCIe generation (3, 4, 5) and width (lanes) of the GPUs' links, the slowest GPU's; they
  // scale the PCIe figures of the bandwidth model. `topo -m` does not show them: a parsed
  // topology keeps the defaults; NVML-read ones take nvmlDeviceGetMaxPcieLinkGeneration/Width
  // (pcie_from_driver true).
  int pcie_generation = 4;
  int pcie_width = 16;
  bool pcie_from_driver = false;
  std::string name;         // preset name or source, for messages
  std::string description;  // one line, for `vgpu topo` and docs

  bool operator==(const Topology& other) const {
    return gpus_ == other.gpus_ && links_ == other.links_;
  }

 private:
  size_t Index(int a, int b) const { return static_cast<size_t>(a) * gpus_.size() + b; }
  std::vector<GpuPlace> gpus_;
  std::vector<PairLink> links_;  // size()*size(), row-major; the diagonal is unused
};

// The raw per-GPU facts NVML gives (what the device backend reads); BuildTopology turns them into
// a Topology. Kept separate so the NVSwitch rule is tested without NVML.
struct NvLinkEnd {
  bool to_switch = false;  // nvmlDeviceGetNvLinkRemoteDeviceType == SWITCH
  int peer = -1;           // for a GPU end: the index of the GPU whose PCI bus id matched; -1 none
};
struct RawGpu {
  int numa_node = -1;
  std::string cpu_affinity;
  std::vector<NvLinkEnd> links;     // active links only
  std::vector<PcieLevel> ancestor;  // per peer index (own index ignored)
  std::vector<bool> p2p;            // per peer index
};
Topology BuildTopology(const std::vector<RawGpu>& gpus);

}  // namespace vgpu::topo
