// Device queries: count, handles, name, UUID, memory, compute capability, PCI address, peers.
#include <cstdio>
#include <cstring>

#include "simgpu/driver/driver.h"

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

namespace {

void FormatBusId(const DeviceSpec& s, char* out, size_t len) {
  std::snprintf(out, len, "%04x:%02x:%02x.0", s.pci_domain, s.pci_bus, s.pci_device);
}

}  // namespace

SIMGPU_API CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= static_cast<int>(D().visible.size())) {
      return CUDA_ERROR_INVALID_DEVICE;
    }
    *device = ordinal;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceGetCount(int* count) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *count = static_cast<int>(D().visible.size());
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    std::snprintf(name, static_cast<size_t>(len), "%s", Spec(dev).name.c_str());
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(uuid->bytes, Spec(dev).uuid_bytes.data(), 16);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return cuDeviceGetUuid(uuid, dev);
}

SIMGPU_API CUresult cuDeviceGetLuid(char* luid, unsigned int* deviceNodeMask, CUdevice dev) {
  (void)luid;
  (void)deviceNodeMask;
  if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  return CUDA_ERROR_NOT_SUPPORTED;  // LUIDs exist on Windows only
}

SIMGPU_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *bytes = Spec(dev).memory_bytes;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  size_t total = 0;
  CUresult rc = cuDeviceTotalMem_v2(&total, dev);
  if (rc == CUDA_SUCCESS) *bytes = total > 0xffffffffu ? 0xffffffffu : static_cast<unsigned>(total);
  return rc;
}

SIMGPU_API CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *major = Spec(dev).cc_major;
    *minor = Spec(dev).cc_minor;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    FormatBusId(Spec(dev), pciBusId, static_cast<size_t>(len));
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (dev == nullptr || pciBusId == nullptr) return CUDA_ERROR_INVALID_VALUE;
    unsigned domain = 0, bus = 0, device = 0, function = 0;
    // Accepts "0000:18:00.0", "00000000:18:00.0" and "18:00.0".
    if (std::sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) {
      domain = 0;
      if (std::sscanf(pciBusId, "%x:%x.%x", &bus, &device, &function) != 3) {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    for (size_t i = 0; i < D().visible.size(); ++i) {
      const DeviceSpec& s = Spec(static_cast<int>(i));
      if (s.pci_domain == domain && s.pci_bus == bus && s.pci_device == device && function == 0) {
        *dev = static_cast<CUdevice>(i);
        return CUDA_SUCCESS;
      }
    }
    return CUDA_ERROR_INVALID_DEVICE;
  });
}

SIMGPU_API CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t* maxWidthInElements,
                                                       CUarray_format format, unsigned numChannels,
                                                       CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    size_t elem = FormatBytes(format) * numChannels;
    if (maxWidthInElements == nullptr || elem == 0) return CUDA_ERROR_INVALID_VALUE;
    *maxWidthInElements = (size_t{1} << 28) / elem;
    return CUDA_SUCCESS;
  });
}

// Peer access between simulated devices is not modelled: every pair reports "no".
SIMGPU_API CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = CheckDevice(peerDev); rc != CUDA_SUCCESS) return rc;
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *canAccessPeer = 0;
  return CUDA_SUCCESS;
}

SIMGPU_API CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib,
                                            CUdevice srcDevice, CUdevice dstDevice) {
  (void)attrib;
  if (CUresult rc = CheckDevice(srcDevice); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = CheckDevice(dstDevice); rc != CUDA_SUCCESS) return rc;
  if (value == nullptr || srcDevice == dstDevice) return CUDA_ERROR_INVALID_DEVICE;
  *value = 0;
  return CUDA_SUCCESS;
}
