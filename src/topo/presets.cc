#include "topo/presets.h"

#include <functional>

namespace vgpu::topo {
namespace {

using L = PcieLevel;

// Every pair gets `pcie(a, b)`; NUMA node and CPU affinity per GPU from `numa` and `affinity`.
Topology Base(int n, const std::function<L(int, int)>& pcie, const std::vector<int>& numa,
              const std::vector<std::string>& affinity) {
  Topology t(n);
  for (int a = 0; a < n; ++a) {
    t.MutableGpu(a).numa_node = numa[a];
    t.MutableGpu(a).cpu_affinity = affinity[a];
    for (int b = a + 1; b < n; ++b) {
      PairLink l;
      l.pcie = pcie(a, b);
      t.SetLink(a, b, l);
    }
  }
  return t;
}

void AllToAllSwitch(Topology* t, int links) {
  for (int a = 0; a < t->size(); ++a) {
    for (int b = a + 1; b < t->size(); ++b) {
      PairLink l = t->Link(a, b);
      l.nvlinks = links;
      l.via_nvswitch = true;
      t->SetLink(a, b, l);
    }
  }
}

void Direct(Topology* t, int a, int b, int links) {
  PairLink l = t->Link(a, b);
  l.nvlinks = links;
  t->SetLink(a, b, l);
}

std::vector<int> Halves(int n, int first, int second) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i < n / 2 ? first : second;
  return v;
}

std::vector<std::string> HalvesText(int n, const std::string& first, const std::string& second) {
  std::vector<std::string> v(n);
  for (int i = 0; i < n; ++i) v[i] = i < n / 2 ? first : second;
  return v;
}

L SocketLevel(int a, int b, int n, L inside) {
  return (a < n / 2) == (b < n / 2) ? inside : L::kSystem;
}

Topology HgxH200() {
  Topology t = Base(
      8, [](int a, int b) { return SocketLevel(a, b, 8, L::kNode); }, Halves(8, 0, 1),
      HalvesText(8, "0-55,112-167", "56-111,168-223"));
  AllToAllSwitch(&t, 18);
  t.pcie_generation = 5;
  t.description = "HGX H200 8-GPU: NV18 to every peer through NVSwitch, two sockets";
  return t;
}

Topology DgxA100() {
  std::vector<int> numa = {3, 3, 1, 1, 7, 7, 5, 5};
  std::vector<std::string> aff = {"48-63,176-191", "48-63,176-191",   "16-31,144-159",
                                  "16-31,144-159", "112-127,240-255", "112-127,240-255",
                                  "80-95,208-223", "80-95,208-223"};
  Topology t = Base(
      8, [](int a, int b) { return a / 2 == b / 2 ? L::kMultiple : L::kSystem; }, numa, aff);
  AllToAllSwitch(&t, 12);
  t.description = "DGX A100: NV12 to every peer through NVSwitch, GPU pairs on 4 NUMA nodes";
  return t;
}

// go-gpuallocator's DGX-1 fixtures: PCIe levels inside a socket.
L Dgx1VoltaLevel(int a, int b) {
  if (a / 4 != b / 4) return L::kSystem;
  return a / 2 == b / 2 ? L::kSingle : L::kHostBridge;
}
L Dgx1PascalLevel(int a, int b) {
  if (a / 4 != b / 4) return L::kSystem;
  return a % 2 == b % 2 ? L::kSingle : L::kHostBridge;
}

Topology Dgx1Volta() {
  Topology t = Base(8, Dgx1VoltaLevel, Halves(8, 0, 1), HalvesText(8, "0-19,40-59", "20-39,60-79"));
  const int kLinks[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1},
                           {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
                           {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
  for (const auto& l : kLinks) Direct(&t, l[0], l[1], l[2]);
  t.pcie_generation = 3;
  t.description = "DGX-1 Volta: hybrid cube-mesh of NV1 and NV2 links, two sockets";
  return t;
}

Topology Dgx1Pascal() {
  Topology t =
      Base(8, Dgx1PascalLevel, Halves(8, 0, 1), HalvesText(8, "0-19,40-59", "20-39,60-79"));
  const int kLinks[][2] = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 2}, {1, 3}, {1, 5}, {2, 3},
                           {2, 6}, {3, 7}, {4, 5}, {4, 6}, {4, 7}, {5, 6}, {5, 7}, {6, 7}};
  for (const auto& l : kLinks) Direct(&t, l[0], l[1], 1);
  t.pcie_generation = 3;
  t.description = "DGX-1 Pascal: cube-mesh of NV1 links, two sockets";
  return t;
}

Topology Pcie4NvBridge() {
  Topology t = Base(
      4, [](int a, int b) { return SocketLevel(a, b, 4, L::kNode); }, Halves(4, 0, 1),
      HalvesText(4, "0-31,64-95", "32-63,96-127"));
  Direct(&t, 0, 1, 12);
  Direct(&t, 2, 3, 12);
  t.description = "4 x A100 PCIe: NVLink bridges (NV12) join 0-1 and 2-3, SYS across sockets";
  return t;
}

Topology Pcie8TwoSocket() {
  Topology t = Base(
      8, [](int a, int b) { return SocketLevel(a, b, 8, L::kNode); }, Halves(8, 0, 1),
      HalvesText(8, "0-31,64-95", "32-63,96-127"));
  t.description = "8 PCIe GPUs on two sockets: NODE inside a socket, SYS across";
  return t;
}

// n GPUs, two sockets; in a socket, switches of `per_switch` GPUs under one upstream switch.
Topology PcieSwitchTree(int n, int per_switch) {
  Topology t = Base(
      n,
      [n, per_switch](int a, int b) {
        if ((a < n / 2) != (b < n / 2)) return L::kSystem;
        return a / per_switch == b / per_switch ? L::kSingle : L::kMultiple;
      },
      Halves(n, 0, 1), HalvesText(n, "0-31,64-95", "32-63,96-127"));
  return t;
}

Topology Rtx8000x4() {
  Topology t = Base(4,
                    [](int a, int b) {
                      if ((a == 0 && b == 1) || (a == 2 && b == 3)) return L::kNode;
                      return L::kSystem;
                    },
                    {0, 0, 1, 1}, {"0-11", "0-11", "12-23", "12-23"});
  Direct(&t, 0, 3, 2);
  Direct(&t, 1, 2, 2);
  t.pcie_generation = 3;
  t.description = "4 x RTX 8000: NV2 bridges join 0-3 and 1-2 across sockets";
  return t;
}

}  // namespace

std::vector<std::string> PresetNames() {
  return {"hgx-h200",     "dgx-a100", "dgx1-volta",    "pcie4-nvbridge", "pcie8-2socket",
          "pcie8-switch", "dgx2",     "pcie16-switch", "rtx8000x4",      "dgx1-pascal"};
}

std::vector<std::string> ServerPresetNames() {
  std::vector<std::string> all = PresetNames();
  return {all.begin(), all.begin() + 6};
}

std::optional<Topology> Preset(std::string_view name) {
  Topology t;
  if (name == "hgx-h200") {
    t = HgxH200();
  } else if (name == "dgx-a100") {
    t = DgxA100();
  } else if (name == "dgx1-volta") {
    t = Dgx1Volta();
  } else if (name == "pcie4-nvbridge") {
    t = Pcie4NvBridge();
  } else if (name == "pcie8-2socket") {
    t = Pcie8TwoSocket();
  } else if (name == "pcie8-switch") {
    t = PcieSwitchTree(8, 2);
    t.pcie_generation = 5;
    t.description = "8 PCIe GPUs behind PCIe switches: PIX in a pair, PXB in a socket, SYS across";
  } else if (name == "dgx2") {
    t = Base(
        16, [](int a, int b) { return SocketLevel(a, b, 16, L::kNode); }, Halves(16, 0, 1),
        HalvesText(16, "0-23,48-71", "24-47,72-95"));
    AllToAllSwitch(&t, 6);
    t.pcie_generation = 3;
    t.description = "DGX-2: 16 x V100, NV6 to every peer through NVSwitch";
  } else if (name == "pcie16-switch") {
    t = PcieSwitchTree(16, 4);
    t.pcie_generation = 5;
    t.description = "16 PCIe GPUs: switches of 4 (PIX), PXB inside a socket, SYS across";
  } else if (name == "rtx8000x4") {
    t = Rtx8000x4();
  } else if (name == "dgx1-pascal") {
    t = Dgx1Pascal();
  } else {
    return std::nullopt;
  }
  t.name = std::string(name);
  return t;
}

}  // namespace vgpu::topo
