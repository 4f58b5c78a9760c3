// NvmlBackend::ReadTopology: the NVML topology calls (common/nvml_topology_api.h), turned into a
// topo::Topology by topo::BuildTopology, with the slowest GPU's PCIe generation and width. Entry
// points are looked up here, not at Open(), so a driver without them only loses the topology.
#include <dlfcn.h>

#include <algorithm>
#include <fstream>

#include "common/nvml_topology_api.h"
#include "device/nvml_backend.h"

namespace vgpu::device {
namespace {

std::string CpuListFromSysfs(const std::string& sysfs_root, const std::string& bus_id) {
  std::ifstream in(sysfs_root + "/bus/pci/devices/" + bus_id + "/local_cpulist");
  std::string list;
  if (!(in >> list)) return "";
  return list;
}

}  // namespace

Result<topo::Topology> NvmlBackend::ReadTopology() {
  Result<std::vector<DeviceInfo>> devices = Discover();
  if (!devices) return devices.error();
  void* lib = LibraryHandle();
  auto ancestor = reinterpret_cast<nvmlDeviceGetTopologyCommonAncestor_fn>(
      dlsym(lib, "nvmlDeviceGetTopologyCommonAncestor"));
  auto p2p = reinterpret_cast<nvmlDeviceGetP2PStatus_fn>(dlsym(lib, "nvmlDeviceGetP2PStatus"));
  auto state =
      reinterpret_cast<nvmlDeviceGetNvLinkState_fn>(dlsym(lib, "nvmlDeviceGetNvLinkState"));
  auto remote_pci = reinterpret_cast<nvmlDeviceGetNvLinkRemotePciInfo_v2_fn>(
      dlsym(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2"));
  auto remote_type = reinterpret_cast<nvmlDeviceGetNvLinkRemoteDeviceType_fn>(
      dlsym(lib, "nvmlDeviceGetNvLinkRemoteDeviceType"));
  auto max_gen = reinterpret_cast<nvmlDeviceGetMaxPcieLinkGeneration_fn>(
      dlsym(lib, "nvmlDeviceGetMaxPcieLinkGeneration"));
  auto max_width = reinterpret_cast<nvmlDeviceGetMaxPcieLinkWidth_fn>(
      dlsym(lib, "nvmlDeviceGetMaxPcieLinkWidth"));
  auto curr_gen = reinterpret_cast<nvmlDeviceGetCurrPcieLinkGeneration_fn>(
      dlsym(lib, "nvmlDeviceGetCurrPcieLinkGeneration"));
  auto curr_width = reinterpret_cast<nvmlDeviceGetCurrPcieLinkWidth_fn>(
      dlsym(lib, "nvmlDeviceGetCurrPcieLinkWidth"));
  if (ancestor == nullptr) {
    return Status::Unavailable("this NVML lacks nvmlDeviceGetTopologyCommonAncestor");
  }
  std::vector<void*> handles;
  {
    std::lock_guard<std::mutex> lock(mu_);
    handles = handles_;
  }
  int n = static_cast<int>(devices->size());
  std::vector<topo::RawGpu> raw(n);
  // The slowest GPU's PCIe link: the Max call (what the link can do), else the Curr one.
  int generation = 0, width = 0;
  auto read_link = [](auto max_fn, auto curr_fn, nvmlDevice_t dev, unsigned hi) -> int {
    unsigned v = 0;
    if (max_fn != nullptr && max_fn(dev, &v) == NVML_SUCCESS && v >= 1 && v <= hi) return v;
    if (curr_fn != nullptr && curr_fn(dev, &v) == NVML_SUCCESS && v >= 1 && v <= hi) return v;
    return 0;
  };
  for (int a = 0; a < n; ++a) {
    const DeviceInfo& d = (*devices)[a];
    auto dev = static_cast<nvmlDevice_t>(handles[a]);
    raw[a].numa_node = d.numa_node;
    if (int g = read_link(max_gen, curr_gen, dev, 16); g > 0) {
      generation = generation == 0 ? g : std::min(generation, g);
    }
    if (int w = read_link(max_width, curr_width, dev, 64); w > 0) {
      width = width == 0 ? w : std::min(width, w);
    }
    raw[a].cpu_affinity = CpuListFromSysfs(options_.sysfs_root, d.pci_bus_id);
    raw[a].ancestor.assign(n, topo::PcieLevel::kSystem);
    raw[a].p2p.assign(n, true);
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
      nvmlReturn_t r = ancestor(dev, static_cast<nvmlDevice_t>(handles[b]), &level);
      if (r != NVML_SUCCESS) {
        return Status::Unavailable("nvmlDeviceGetTopologyCommonAncestor(" + std::to_string(a) +
                                   ", " + std::to_string(b) + ") failed (NVML error " +
                                   std::to_string(static_cast<int>(r)) + ")");
      }
      raw[a].ancestor[b] = static_cast<topo::PcieLevel>(static_cast<int>(level));
      nvmlGpuP2PStatus_t status = NVML_P2P_STATUS_OK;
      if (p2p != nullptr && p2p(dev, static_cast<nvmlDevice_t>(handles[b]),
                                NVML_P2P_CAPS_INDEX_READ, &status) == NVML_SUCCESS) {
        raw[a].p2p[b] = status == NVML_P2P_STATUS_OK;
      }
    }
    for (unsigned link = 0; state != nullptr && link < VGPU_NVML_NVLINK_MAX_LINKS; ++link) {
      nvmlEnableState_t active = NVML_FEATURE_DISABLED;
      nvmlReturn_t r = state(dev, link, &active);
      if (r == NVML_ERROR_INVALID_ARGUMENT || (r == NVML_ERROR_NOT_SUPPORTED && link == 0)) break;
      if (r != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
      topo::NvLinkEnd end;
      nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
      if (remote_type != nullptr && remote_type(dev, link, &type) == NVML_SUCCESS &&
          type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
        end.to_switch = true;
      } else {
        nvmlPciInfo_t pci{};
        if (remote_pci == nullptr || remote_pci(dev, link, &pci) != NVML_SUCCESS) continue;
        std::string bus = NormalizePciBusId(pci.busId);
        for (int b = 0; b < n; ++b) {
          if (b != a && (*devices)[b].pci_bus_id == bus) end.peer = b;
        }
        if (end.peer < 0) continue;  // another device (an NPU): not a GPU pair
      }
      raw[a].links.push_back(end);
    }
  }
  topo::Topology t = topo::BuildTopology(raw);
  std::string asymmetry = t.Asymmetry();
  if (!asymmetry.empty())
    return Status::Internal("NVML reports an asymmetric topology: " + asymmetry);
  t.name = Describe();
  if (generation > 0) {
    t.pcie_generation = generation;
    t.pcie_from_driver = true;
  }
  if (width > 0) t.pcie_width = width;
  return t;
}

}  // namespace vgpu::device
