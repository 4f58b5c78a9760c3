// NVML: topology, from the configured topology (simgpu/config.h `topology=`). Every GPU's active
// links come first to its direct NVLink peers (in peer order, as many as the pair has), then to
// NVSwitch (the most links any of its switch pairs has; remote device type SWITCH, remote PCI
// address one of four switches). Without a configured topology these calls answer
// NVML_ERROR_NOT_SUPPORTED, as on a GPU without NVLink.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/nvml_topology_api.h"
#include "hw/gpu_models.h"
#include "simgpu/nvml/nvml_internal.h"

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::nvml;

namespace {

struct LinkEnd {
  bool to_switch = false;
  unsigned peer = 0;  // GPU end: the peer's index; switch end: the switch number
};

const vgpu::topo::Topology* Topo() {
  const Config& c = L().config;
  return c.has_topology ? &c.topology : nullptr;
}

std::vector<LinkEnd> Links(unsigned index) {
  std::vector<LinkEnd> out;
  const vgpu::topo::Topology* t = Topo();
  int switch_links = 0;
  for (int peer = 0; peer < t->size(); ++peer) {
    if (peer == static_cast<int>(index)) continue;
    const vgpu::topo::PairLink& l = t->Link(static_cast<int>(index), peer);
    if (l.via_nvswitch) {
      switch_links = std::max(switch_links, l.nvlinks);
    } else {
      for (int i = 0; i < l.nvlinks; ++i) out.push_back({false, static_cast<unsigned>(peer)});
    }
  }
  for (int i = 0; i < switch_links; ++i) out.push_back({true, static_cast<unsigned>(i % 4)});
  if (out.size() > VGPU_NVML_NVLINK_MAX_LINKS) out.resize(VGPU_NVML_NVLINK_MAX_LINKS);
  return out;
}

// Validates the device and the topology; *index receives the device index.
nvmlReturn_t Check(nvmlDevice_t device, unsigned* index) {
  if (nvmlReturn_t rc = CheckDevice(device, index); rc != NVML_SUCCESS) return rc;
  return Topo() == nullptr ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
}

nvmlReturn_t LinkOf(nvmlDevice_t device, unsigned link, LinkEnd* end) {
  unsigned index = 0;
  if (nvmlReturn_t rc = Check(device, &index); rc != NVML_SUCCESS) return rc;
  if (link >= VGPU_NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<LinkEnd> links = Links(index);
  if (link >= links.size()) return NVML_ERROR_NOT_SUPPORTED;  // no such active link
  *end = links[link];
  return NVML_SUCCESS;
}

}  // namespace

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1,
                                                                 nvmlDevice_t device2,
                                                                 nvmlGpuTopologyLevel_t* level) {
  unsigned a = 0, b = 0;
  if (nvmlReturn_t rc = Check(device1, &a); rc != NVML_SUCCESS) return rc;
  if (nvmlReturn_t rc = Check(device2, &b); rc != NVML_SUCCESS) return rc;
  if (level == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (a == b) {
    *level = NVML_TOPOLOGY_INTERNAL;
    return NVML_SUCCESS;
  }
  *level = static_cast<nvmlGpuTopologyLevel_t>(
      static_cast<int>(Topo()->Link(static_cast<int>(a), static_cast<int>(b)).pcie));
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                                    nvmlGpuP2PCapsIndex_t p2pIndex,
                                                    nvmlGpuP2PStatus_t* p2pStatus) {
  unsigned a = 0, b = 0;
  if (nvmlReturn_t rc = Check(device1, &a); rc != NVML_SUCCESS) return rc;
  if (nvmlReturn_t rc = Check(device2, &b); rc != NVML_SUCCESS) return rc;
  if (p2pStatus == nullptr || p2pIndex >= NVML_P2P_CAPS_INDEX_UNKNOWN) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (a == b) {
    *p2pStatus = NVML_P2P_STATUS_OK;
    return NVML_SUCCESS;
  }
  const vgpu::topo::PairLink& l = Topo()->Link(static_cast<int>(a), static_cast<int>(b));
  bool ok = p2pIndex == NVML_P2P_CAPS_INDEX_NVLINK ? l.nvlinks > 0 : l.p2p;
  *p2pStatus = ok ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                      nvmlEnableState_t* isActive) {
  unsigned index = 0;
  if (nvmlReturn_t rc = Check(device, &index); rc != NVML_SUCCESS) return rc;
  if (isActive == nullptr || link >= VGPU_NVML_NVLINK_MAX_LINKS) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *isActive = link < Links(index).size() ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                                 unsigned int link,
                                                                 nvmlPciInfo_t* pci) {
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  LinkEnd end;
  if (nvmlReturn_t rc = LinkOf(device, link, &end); rc != NVML_SUCCESS) return rc;
  std::memset(pci, 0, sizeof(*pci));
  unsigned domain = 0, bus = 0xc0 + end.peer, dev = 0;
  if (!end.to_switch) {
    const DeviceSpec& s = Spec(end.peer);
    domain = s.pci_domain;
    bus = s.pci_bus;
    dev = s.pci_device;
  }
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04x:%02x:%02x.0", domain, bus, dev);
  std::snprintf(pci->busId, sizeof(pci->busId), "%08x:%02x:%02x.0", domain, bus, dev);
  pci->domain = domain;
  pci->bus = bus;
  pci->device = dev;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(
    nvmlDevice_t device, unsigned int link, nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType) {
  if (pNvLinkDeviceType == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  LinkEnd end;
  if (nvmlReturn_t rc = LinkOf(device, link, &end); rc != NVML_SUCCESS) return rc;
  *pNvLinkDeviceType = end.to_switch ? NVML_NVLINK_DEVICE_TYPE_SWITCH : NVML_NVLINK_DEVICE_TYPE_GPU;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  unsigned index = 0;
  if (nvmlReturn_t rc = Check(device, &index); rc != NVML_SUCCESS) return rc;
  if (node == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  int numa = Topo()->Gpu(static_cast<int>(index)).numa_node;
  if (numa < 0) return NVML_ERROR_NOT_SUPPORTED;
  *node = static_cast<unsigned>(numa);
  return NVML_SUCCESS;
}

// PCIe link: the device's pcie_gen / pcie_width, else the topology's, else the model's. The
// simulated link never idles down, so the Curr calls answer what the Max ones do.
namespace {

unsigned PcieGeneration(unsigned index) {
  const DeviceSpec& s = Spec(index);
  if (s.pcie_generation > 0) return static_cast<unsigned>(s.pcie_generation);
  if (const vgpu::topo::Topology* t = Topo()) return static_cast<unsigned>(t->pcie_generation);
  const vgpu::hw::GpuModel* m = vgpu::hw::FindSimPreset(s.model);
  return m != nullptr && m->pcie_generation > 0 ? static_cast<unsigned>(m->pcie_generation) : 5u;
}

unsigned PcieWidth(unsigned index) {
  const DeviceSpec& s = Spec(index);
  if (s.pcie_width > 0) return static_cast<unsigned>(s.pcie_width);
  if (const vgpu::topo::Topology* t = Topo()) return static_cast<unsigned>(t->pcie_width);
  return 16u;
}

nvmlReturn_t AnswerPcie(nvmlDevice_t device, unsigned int* out, unsigned (*value)(unsigned)) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *out = value(index);
  return NVML_SUCCESS;
}

}  // namespace

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device,
                                                                unsigned int* maxLinkGen) {
  return AnswerPcie(device, maxLinkGen, PcieGeneration);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device,
                                                           unsigned int* maxLinkWidth) {
  return AnswerPcie(device, maxLinkWidth, PcieWidth);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device,
                                                                 unsigned int* currLinkGen) {
  return AnswerPcie(device, currLinkGen, PcieGeneration);
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device,
                                                            unsigned int* currLinkWidth) {
  return AnswerPcie(device, currLinkWidth, PcieWidth);
}
