// NVML's topology entry points and types, declared from the public API reference (nvml.h is not
// installed on build machines), in the style of common/nvml_api.h: types mirror NVML's ABI, and
// only function pointer types are declared (vgpu loads libnvidia-ml.so.1 with dlopen).
//
// The simulated NVML (src/simgpu/nvml/nvml_topology.cc) implements them from its configured
// topology; the device backend (src/device/nvml_topology.cc) reads them.
#pragma once

#include "common/nvml_api.h"

extern "C" {

// nvmlDeviceGetTopologyCommonAncestor levels; the gaps are NVML's.
typedef enum nvmlGpuLevel_enum {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,  // formerly NVML_TOPOLOGY_CPU
  NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;

typedef enum nvmlGpuP2PStatus_enum {
  NVML_P2P_STATUS_OK = 0,
  NVML_P2P_STATUS_CHIPSET_NOT_SUPPORED = 1,
  NVML_P2P_STATUS_GPU_NOT_SUPPORTED = 2,
  NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED = 3,
  NVML_P2P_STATUS_DISABLED_BY_REGKEY = 4,
  NVML_P2P_STATUS_NOT_SUPPORTED = 5,
  NVML_P2P_STATUS_UNKNOWN = 6
} nvmlGpuP2PStatus_t;

typedef enum nvmlGpuP2PCapsIndex_enum {
  NVML_P2P_CAPS_INDEX_READ = 0,
  NVML_P2P_CAPS_INDEX_WRITE = 1,
  NVML_P2P_CAPS_INDEX_NVLINK = 2,
  NVML_P2P_CAPS_INDEX_ATOMICS = 3,
  NVML_P2P_CAPS_INDEX_PCI = 4,
  NVML_P2P_CAPS_INDEX_UNKNOWN = 5
} nvmlGpuP2PCapsIndex_t;

typedef enum nvmlIntNvLinkDeviceType_enum {
  NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
  NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
  NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
  NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF
} nvmlIntNvLinkDeviceType_t;

// NVML_NVLINK_MAX_LINKS in current nvml.h.
#define VGPU_NVML_NVLINK_MAX_LINKS 36

typedef nvmlReturn_t (*nvmlDeviceGetTopologyCommonAncestor_fn)(nvmlDevice_t device1,
                                                               nvmlDevice_t device2,
                                                               nvmlGpuTopologyLevel_t* level);
typedef nvmlReturn_t (*nvmlDeviceGetP2PStatus_fn)(nvmlDevice_t device1, nvmlDevice_t device2,
                                                  nvmlGpuP2PCapsIndex_t index,
                                                  nvmlGpuP2PStatus_t* status);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t device, unsigned int link,
                                                    nvmlEnableState_t* is_active);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemotePciInfo_v2_fn)(nvmlDevice_t device,
                                                               unsigned int link,
                                                               nvmlPciInfo_t* pci);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemoteDeviceType_fn)(nvmlDevice_t device,
                                                               unsigned int link,
                                                               nvmlIntNvLinkDeviceType_t* type);
typedef nvmlReturn_t (*nvmlDeviceGetNumaNodeId_fn)(nvmlDevice_t device, unsigned int* node);
// PCIe link generation (1..6) and width (lanes). The Max variants: the most the GPU and the system
// allow together; the Curr variants: the link now, which drops to a lower generation while the
// GPU idles (power saving), so the bandwidth model reads the Max ones first.
typedef nvmlReturn_t (*nvmlDeviceGetMaxPcieLinkGeneration_fn)(nvmlDevice_t device,
                                                              unsigned int* generation);
typedef nvmlReturn_t (*nvmlDeviceGetMaxPcieLinkWidth_fn)(nvmlDevice_t device, unsigned int* width);
typedef nvmlReturn_t (*nvmlDeviceGetCurrPcieLinkGeneration_fn)(nvmlDevice_t device,
                                                               unsigned int* generation);
typedef nvmlReturn_t (*nvmlDeviceGetCurrPcieLinkWidth_fn)(nvmlDevice_t device, unsigned int* width);

}  // extern "C"

static_assert(sizeof(nvmlGpuTopologyLevel_t) == 4 && sizeof(nvmlGpuP2PStatus_t) == 4 &&
                  sizeof(nvmlGpuP2PCapsIndex_t) == 4 && sizeof(nvmlIntNvLinkDeviceType_t) == 4,
              "NVML enums are 32-bit");
