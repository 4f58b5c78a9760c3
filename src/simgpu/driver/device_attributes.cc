// cuDeviceGetAttribute: the values of a Hopper-class (or the configured) device.
#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

// Returns the attribute's value; false if the attribute is outside the enum.
bool AttributeValue(CUdevice_attribute attr, const DeviceSpec& s, int* v) {
  const bool hopper = s.cc_major >= 9;
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = s.clock_mhz * 1000; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *v = 512; break;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = s.sm_count; break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *v = CU_COMPUTEMODE_DEFAULT; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH: *v = 131072; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH: *v = 131072; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH: *v = 16384; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT: *v = 16384; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH: *v = 16384; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: *v = 512; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = static_cast<int>(s.pci_bus); break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = static_cast<int>(s.pci_device); break;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = s.memory_clock_mhz * 1000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = s.bus_width_bits; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = static_cast<int>(s.l2_bytes); break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *v = hopper ? 5 : 3; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE: *v = 8192; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE: *v = 8192; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = static_cast<int>(s.pci_domain); break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS: *v = 2046; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH: *v = 131072; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH: *v = 16384; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT: *v = 16384; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH: *v = 16384; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS: *v = 2046; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH: *v = 268435456; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH: *v = 131072; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT: *v = 65000; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH: *v = 2097120; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = s.cc_major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = s.cc_minor; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH: *v = 32768; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = hopper ? 233472 : 167936; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: *v = 2; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = hopper ? 232448 : 166912; break;
    case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE:
      *v = static_cast<int>(s.l2_bytes / 100 * 65);
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: *v = 134213632; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: *v = hopper ? 1 : 0; break;
    case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT: *v = hopper ? 4 : 1; break;
    case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED: *v = hopper ? 1 : 0; break;
    case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_NUMA_ID: *v = -1; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *v = -1; break;
    case CU_DEVICE_ATTRIBUTE_MPS_ENABLED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID: *v = static_cast<int>(s.pci_device_id); break;
    case CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID:
      *v = static_cast<int>((s.pci_device_id & 0xffff0000u) | 0x10deu);
      break;
    default:
      // Other attributes inside the enum describe features the simulation does not offer.
      if (attr <= 0 || attr >= CU_DEVICE_ATTRIBUTE_MAX) return false;
      *v = 0;
      break;
  }
  return true;
}

}  // namespace
}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return AttributeValue(attrib, Spec(dev), pi) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

SIMGPU_API CUresult cuDeviceGetProperties(CUdevprop* prop, CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const DeviceSpec& s = Spec(dev);
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = 1024;
    prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 2147483647;
    prop->maxGridSize[1] = 65535;
    prop->maxGridSize[2] = 65535;
    prop->sharedMemPerBlock = 49152;
    prop->totalConstantMemory = 65536;
    prop->SIMDWidth = 32;
    prop->memPitch = 2147483647;
    prop->regsPerBlock = 65536;
    prop->clockRate = s.clock_mhz * 1000;
    prop->textureAlign = 512;
    return CUDA_SUCCESS;
  });
}
