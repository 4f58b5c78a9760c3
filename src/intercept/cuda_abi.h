// The part of the CUDA driver API's binary interface that libvgpu.so touches, declared from the
// public cuda.h reference so that the library builds on machines without the CUDA toolkit.
// Names and values match cuda.h; everything lives in namespace vgpu::cuda so that a test can
// include both and compare them (cuda_abi_test.cc, built when cuda.h is found).
//
// Only types are declared here; hook prototypes come from hooks.def (hooks.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vgpu::cuda {

using cuuint64_t = uint64_t;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUdeviceptr_v1 = unsigned int;  // the pre-3.2 32-bit device pointer
using CUmemGenericAllocationHandle = unsigned long long;

enum CUresult : int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999,
};

// Opaque handles.
struct CUctx_st;
struct CUstream_st;
struct CUfunc_st;
struct CUarray_st;
struct CUmipmappedArray_st;
struct CUmemPoolHandle_st;
struct CUgraph_st;
struct CUgraphNode_st;
struct CUgraphExec_st;
struct CUlaunchAttribute_st;
struct CUexecAffinityParam_st;
struct CUctxCreateParams_st;
struct CUDA_GRAPH_INSTANTIATE_PARAMS_st;
struct CUevent_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUfunction = CUfunc_st*;
using CUarray = CUarray_st*;
using CUmipmappedArray = CUmipmappedArray_st*;
using CUmemoryPool = CUmemPoolHandle_st*;
using CUgraph = CUgraph_st*;
using CUgraphNode = CUgraphNode_st*;
using CUgraphExec = CUgraphExec_st*;
using CUevent = CUevent_st*;
using CUexecAffinityParam = CUexecAffinityParam_st;
using CUctxCreateParams = CUctxCreateParams_st;
using CUDA_GRAPH_INSTANTIATE_PARAMS = CUDA_GRAPH_INSTANTIATE_PARAMS_st;

enum CUarray_format : int {
  CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
  CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
  CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
  CU_AD_FORMAT_SIGNED_INT8 = 0x08,
  CU_AD_FORMAT_SIGNED_INT16 = 0x09,
  CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
  CU_AD_FORMAT_HALF = 0x10,
  CU_AD_FORMAT_FLOAT = 0x20,
  CU_AD_FORMAT_UNORM_INT_101010_2 = 0x50,
  CU_AD_FORMAT_BC1_UNORM = 0x91,
  CU_AD_FORMAT_BC1_UNORM_SRGB = 0x92,
  CU_AD_FORMAT_BC2_UNORM = 0x93,
  CU_AD_FORMAT_BC2_UNORM_SRGB = 0x94,
  CU_AD_FORMAT_BC3_UNORM = 0x95,
  CU_AD_FORMAT_BC3_UNORM_SRGB = 0x96,
  CU_AD_FORMAT_BC4_UNORM = 0x97,
  CU_AD_FORMAT_BC4_SNORM = 0x98,
  CU_AD_FORMAT_BC5_UNORM = 0x99,
  CU_AD_FORMAT_BC5_SNORM = 0x9a,
  CU_AD_FORMAT_BC6H_UF16 = 0x9b,
  CU_AD_FORMAT_BC6H_SF16 = 0x9c,
  CU_AD_FORMAT_BC7_UNORM = 0x9d,
  CU_AD_FORMAT_BC7_UNORM_SRGB = 0x9e,
  CU_AD_FORMAT_P010 = 0x9f,
  CU_AD_FORMAT_P016 = 0xa1,
  CU_AD_FORMAT_NV16 = 0xa2,
  CU_AD_FORMAT_P210 = 0xa3,
  CU_AD_FORMAT_P216 = 0xa4,
  CU_AD_FORMAT_YUY2 = 0xa5,
  CU_AD_FORMAT_Y210 = 0xa6,
  CU_AD_FORMAT_Y216 = 0xa7,
  CU_AD_FORMAT_AYUV = 0xa8,
  CU_AD_FORMAT_Y410 = 0xa9,
  CU_AD_FORMAT_NV12 = 0xb0,
  CU_AD_FORMAT_Y416 = 0xb1,
  CU_AD_FORMAT_Y444_PLANAR8 = 0xb2,
  CU_AD_FORMAT_Y444_PLANAR10 = 0xb3,
  CU_AD_FORMAT_YUV444_8bit_SemiPlanar = 0xb4,
  CU_AD_FORMAT_YUV444_16bit_SemiPlanar = 0xb5,
  CU_AD_FORMAT_UNORM_INT8X1 = 0xc0,
  CU_AD_FORMAT_UNORM_INT8X2 = 0xc1,
  CU_AD_FORMAT_UNORM_INT8X4 = 0xc2,
  CU_AD_FORMAT_UNORM_INT16X1 = 0xc3,
  CU_AD_FORMAT_UNORM_INT16X2 = 0xc4,
  CU_AD_FORMAT_UNORM_INT16X4 = 0xc5,
  CU_AD_FORMAT_SNORM_INT8X1 = 0xc6,
  CU_AD_FORMAT_SNORM_INT8X2 = 0xc7,
  CU_AD_FORMAT_SNORM_INT8X4 = 0xc8,
  CU_AD_FORMAT_SNORM_INT16X1 = 0xc9,
  CU_AD_FORMAT_SNORM_INT16X2 = 0xca,
  CU_AD_FORMAT_SNORM_INT16X4 = 0xcb,
  CU_AD_FORMAT_MAX = 0x7FFFFFFF,
};

struct CUDA_ARRAY_DESCRIPTOR {
  size_t Width;
  size_t Height;
  CUarray_format Format;
  unsigned int NumChannels;
};

// The pre-3.2 descriptors with 32-bit extents.
struct CUDA_ARRAY_DESCRIPTOR_v1 {
  unsigned int Width;
  unsigned int Height;
  CUarray_format Format;
  unsigned int NumChannels;
};

struct CUDA_ARRAY3D_DESCRIPTOR_v1 {
  unsigned int Width;
  unsigned int Height;
  unsigned int Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
};

// Flags of CUDA_ARRAY3D_DESCRIPTOR::Flags that change the size computation.
inline constexpr unsigned int kArray3DLayered = 0x01;  // CUDA_ARRAY3D_LAYERED
inline constexpr unsigned int kArray3DCubemap = 0x04;  // CUDA_ARRAY3D_CUBEMAP

struct CUDA_ARRAY3D_DESCRIPTOR {
  size_t Width;
  size_t Height;
  size_t Depth;
  CUarray_format Format;
  unsigned int NumChannels;
  unsigned int Flags;
};

struct CUDA_ARRAY_MEMORY_REQUIREMENTS {
  size_t size;
  size_t alignment;
  unsigned int reserved[4];
};

enum CUmemLocationType : int {
  CU_MEM_LOCATION_TYPE_INVALID = 0x0,
  CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
  CU_MEM_LOCATION_TYPE_HOST = 0x2,
  CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3,
  CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 0x4,
  CU_MEM_LOCATION_TYPE_MAX = 0x7FFFFFFF,
};

enum CUmemAllocationType : int {
  CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
  CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
  CU_MEM_ALLOCATION_TYPE_MANAGED = 0x2,
  CU_MEM_ALLOCATION_TYPE_MAX = 0x7FFFFFFF,
};

using CUmemAllocationHandleType = int;

struct CUmemLocation {
  CUmemLocationType type;
  int id;
};

struct CUmemAllocationProp {
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};

struct CUmemPoolProps {
  CUmemAllocationType allocType;
  CUmemAllocationHandleType handleTypes;
  CUmemLocation location;
  void* win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
};

struct CUmemAccessDesc {
  CUmemLocation location;
  int flags;
};

struct CUDA_MEM_ALLOC_NODE_PARAMS {
  CUmemPoolProps poolProps;
  const CUmemAccessDesc* accessDescs;
  size_t accessDescCount;
  size_t bytesize;
  CUdeviceptr dptr;
};

enum CUmemPool_attribute : int {
  CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
  CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2,
  CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
  CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
  CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6,
  CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,
  CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8,
};

enum CUgraphNodeType : int {
  CU_GRAPH_NODE_TYPE_KERNEL = 0,
  CU_GRAPH_NODE_TYPE_MEMCPY = 1,
  CU_GRAPH_NODE_TYPE_GRAPH = 4,
  CU_GRAPH_NODE_TYPE_MEM_ALLOC = 10,
  CU_GRAPH_NODE_TYPE_MEM_FREE = 11,
};

enum CUstreamCaptureStatus : int {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
};

enum CUstreamCaptureMode : int {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2,
};

struct CUlaunchConfig {
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute_st* attrs;
  unsigned int numAttrs;
};

enum CUdriverProcAddressQueryResult : int {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};

inline constexpr cuuint64_t CU_GET_PROC_ADDRESS_DEFAULT = 0;
inline constexpr cuuint64_t CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 << 0;
inline constexpr cuuint64_t CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1;

struct CUuuid {
  char bytes[16];
};

// Copies (hook_copy.cc).
enum CUmemorytype : int {
  CU_MEMORYTYPE_HOST = 0x01,
  CU_MEMORYTYPE_DEVICE = 0x02,
  CU_MEMORYTYPE_ARRAY = 0x03,
  CU_MEMORYTYPE_UNIFIED = 0x04,
};

enum CUpointer_attribute : int {
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
};

// Spill (spill.cc): advice on managed memory.
enum CUmem_advise : int {
  CU_MEM_ADVISE_SET_PREFERRED_LOCATION = 3,
  CU_MEM_ADVISE_SET_ACCESSED_BY = 5,
};
inline constexpr CUdevice kDeviceCpu = -1;       // CU_DEVICE_CPU
inline constexpr unsigned kMemAttachGlobal = 1;  // CU_MEM_ATTACH_GLOBAL

struct CUmemcpyAttributes_st;  // batch copies: passed through untouched
using CUmemcpyAttributes = CUmemcpyAttributes_st;

struct CUDA_MEMCPY2D {
  size_t srcXInBytes;
  size_t srcY;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  size_t srcPitch;
  size_t dstXInBytes;
  size_t dstY;
  CUmemorytype dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  size_t dstPitch;
  size_t WidthInBytes;
  size_t Height;
};

struct CUDA_MEMCPY3D {
  size_t srcXInBytes;
  size_t srcY;
  size_t srcZ;
  size_t srcLOD;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  void* reserved0;
  size_t srcPitch;
  size_t srcHeight;
  size_t dstXInBytes;
  size_t dstY;
  size_t dstZ;
  size_t dstLOD;
  CUmemorytype dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  void* reserved1;
  size_t dstPitch;
  size_t dstHeight;
  size_t WidthInBytes;
  size_t Height;
  size_t Depth;
};

struct CUDA_MEMCPY3D_PEER {
  size_t srcXInBytes;
  size_t srcY;
  size_t srcZ;
  size_t srcLOD;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  CUcontext srcContext;
  size_t srcPitch;
  size_t srcHeight;
  size_t dstXInBytes;
  size_t dstY;
  size_t dstZ;
  size_t dstLOD;
  CUmemorytype dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  CUcontext dstContext;
  size_t dstPitch;
  size_t dstHeight;
  size_t WidthInBytes;
  size_t Height;
  size_t Depth;
};

}  // namespace vgpu::cuda
