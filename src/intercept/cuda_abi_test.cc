// Checks the library's own CUDA ABI declarations (cuda_abi.h) against the toolkit's cuda.h:
// sizes, offsets and the enum values libvgpu relies on. Compiled only when cuda.h is found.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstddef>

#include "intercept/cuda_abi.h"

namespace {

namespace v = ::vgpu::cuda;

#define SAME_SIZE(ours, theirs) static_assert(sizeof(v::ours) == sizeof(theirs), #ours)
#define SAME_OFFSET(ours, theirs, field) \
  static_assert(offsetof(v::ours, field) == offsetof(theirs, field), #ours "." #field)
#define SAME_VALUE(name) \
  static_assert(static_cast<long long>(v::name) == static_cast<long long>(name), #name)

SAME_SIZE(CUresult, CUresult);
SAME_SIZE(CUdeviceptr, CUdeviceptr);
SAME_SIZE(CUdevice, CUdevice);
SAME_SIZE(CUmemGenericAllocationHandle, CUmemGenericAllocationHandle);
SAME_SIZE(CUarray_format, CUarray_format);
SAME_SIZE(CUDA_ARRAY_DESCRIPTOR, CUDA_ARRAY_DESCRIPTOR);
SAME_OFFSET(CUDA_ARRAY_DESCRIPTOR, CUDA_ARRAY_DESCRIPTOR, NumChannels);
SAME_SIZE(CUDA_ARRAY3D_DESCRIPTOR, CUDA_ARRAY3D_DESCRIPTOR);
SAME_SIZE(CUdeviceptr_v1, unsigned int);
static_assert(sizeof(v::CUDA_ARRAY_DESCRIPTOR_v1) == 16);
static_assert(sizeof(v::CUDA_ARRAY3D_DESCRIPTOR_v1) == 24);
SAME_OFFSET(CUDA_ARRAY3D_DESCRIPTOR, CUDA_ARRAY3D_DESCRIPTOR, Format);
SAME_OFFSET(CUDA_ARRAY3D_DESCRIPTOR, CUDA_ARRAY3D_DESCRIPTOR, Flags);
SAME_SIZE(CUDA_ARRAY_MEMORY_REQUIREMENTS, CUDA_ARRAY_MEMORY_REQUIREMENTS);
SAME_SIZE(CUmemLocation, CUmemLocation);
SAME_SIZE(CUmemAllocationProp, CUmemAllocationProp);
SAME_OFFSET(CUmemAllocationProp, CUmemAllocationProp, location);
SAME_OFFSET(CUmemAllocationProp, CUmemAllocationProp, allocFlags);
SAME_SIZE(CUmemPoolProps, CUmemPoolProps);
SAME_OFFSET(CUmemPoolProps, CUmemPoolProps, location);
SAME_SIZE(CUmemAccessDesc, CUmemAccessDesc);
SAME_SIZE(CUDA_MEM_ALLOC_NODE_PARAMS, CUDA_MEM_ALLOC_NODE_PARAMS);
SAME_OFFSET(CUDA_MEM_ALLOC_NODE_PARAMS, CUDA_MEM_ALLOC_NODE_PARAMS, bytesize);
SAME_OFFSET(CUDA_MEM_ALLOC_NODE_PARAMS, CUDA_MEM_ALLOC_NODE_PARAMS, dptr);
SAME_SIZE(CUlaunchConfig, CUlaunchConfig);
SAME_OFFSET(CUlaunchConfig, CUlaunchConfig, hStream);
SAME_OFFSET(CUlaunchConfig, CUlaunchConfig, numAttrs);
SAME_SIZE(CUuuid, CUuuid);
SAME_VALUE(CUDA_SUCCESS);
SAME_VALUE(CUDA_ERROR_OUT_OF_MEMORY);
SAME_VALUE(CUDA_ERROR_NOT_INITIALIZED);
SAME_VALUE(CUDA_ERROR_INVALID_CONTEXT);
SAME_VALUE(CUDA_ERROR_NOT_FOUND);
SAME_VALUE(CUDA_ERROR_NOT_SUPPORTED);
SAME_VALUE(CU_AD_FORMAT_FLOAT);
SAME_VALUE(CU_AD_FORMAT_NV12);
SAME_VALUE(CU_AD_FORMAT_BC7_UNORM_SRGB);
SAME_VALUE(CU_AD_FORMAT_UNORM_INT_101010_2);
SAME_VALUE(CU_AD_FORMAT_YUV444_16bit_SemiPlanar);
SAME_VALUE(CU_AD_FORMAT_SNORM_INT16X4);
SAME_VALUE(CU_MEM_LOCATION_TYPE_DEVICE);
SAME_VALUE(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
SAME_VALUE(CU_MEM_ALLOCATION_TYPE_MANAGED);
SAME_VALUE(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
SAME_VALUE(CU_MEMPOOL_ATTR_USED_MEM_HIGH);
SAME_VALUE(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
SAME_VALUE(CU_GRAPH_NODE_TYPE_GRAPH);
SAME_VALUE(CU_STREAM_CAPTURE_STATUS_ACTIVE);
SAME_VALUE(CU_STREAM_CAPTURE_MODE_RELAXED);
SAME_VALUE(CU_STREAM_CAPTURE_MODE_GLOBAL);
SAME_VALUE(CUDA_ERROR_NOT_READY);
SAME_VALUE(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
SAME_VALUE(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
static_assert(v::kArray3DLayered == CUDA_ARRAY3D_LAYERED);
static_assert(v::kArray3DCubemap == CUDA_ARRAY3D_CUBEMAP);

TEST(CudaAbi, MatchesTheToolkitHeader) { SUCCEED() << "checked at compile time"; }

}  // namespace
