// Error names and descriptions, the private export tables (not simulated), and the profiler
// control entry points (no profiler to control: they succeed).
#include <cctype>
#include <cstring>
#include <string>

#include "simgpu/driver/driver.h"

#include <cudaProfiler.h>

namespace vgpu::simgpu::driver {
namespace {

#define SIMGPU_CU_RESULTS(X)                   \
  X(CUDA_SUCCESS)                              \
  X(CUDA_ERROR_INVALID_VALUE)                  \
  X(CUDA_ERROR_OUT_OF_MEMORY)                  \
  X(CUDA_ERROR_NOT_INITIALIZED)                \
  X(CUDA_ERROR_DEINITIALIZED)                  \
  X(CUDA_ERROR_PROFILER_DISABLED)              \
  X(CUDA_ERROR_PROFILER_NOT_INITIALIZED)       \
  X(CUDA_ERROR_PROFILER_ALREADY_STARTED)       \
  X(CUDA_ERROR_PROFILER_ALREADY_STOPPED)       \
  X(CUDA_ERROR_STUB_LIBRARY)                   \
  X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER)     \
  X(CUDA_ERROR_DEVICE_UNAVAILABLE)             \
  X(CUDA_ERROR_NO_DEVICE)                      \
  X(CUDA_ERROR_INVALID_DEVICE)                 \
  X(CUDA_ERROR_DEVICE_NOT_LICENSED)            \
  X(CUDA_ERROR_INVALID_IMAGE)                  \
  X(CUDA_ERROR_INVALID_CONTEXT)                \
  X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT)        \
  X(CUDA_ERROR_MAP_FAILED)                     \
  X(CUDA_ERROR_UNMAP_FAILED)                   \
  X(CUDA_ERROR_ARRAY_IS_MAPPED)                \
  X(CUDA_ERROR_ALREADY_MAPPED)                 \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU)              \
  X(CUDA_ERROR_ALREADY_ACQUIRED)               \
  X(CUDA_ERROR_NOT_MAPPED)                     \
  X(CUDA_ERROR_NOT_MAPPED_AS_ARRAY)            \
  X(CUDA_ERROR_NOT_MAPPED_AS_POINTER)          \
  X(CUDA_ERROR_ECC_UNCORRECTABLE)              \
  X(CUDA_ERROR_UNSUPPORTED_LIMIT)              \
  X(CUDA_ERROR_CONTEXT_ALREADY_IN_USE)         \
  X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)        \
  X(CUDA_ERROR_INVALID_PTX)                    \
  X(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT)       \
  X(CUDA_ERROR_NVLINK_UNCORRECTABLE)           \
  X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND)         \
  X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)        \
  X(CUDA_ERROR_JIT_COMPILATION_DISABLED)       \
  X(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY)      \
  X(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC)       \
  X(CUDA_ERROR_CONTAINED)                      \
  X(CUDA_ERROR_INVALID_SOURCE)                 \
  X(CUDA_ERROR_FILE_NOT_FOUND)                 \
  X(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND) \
  X(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED)      \
  X(CUDA_ERROR_OPERATING_SYSTEM)               \
  X(CUDA_ERROR_INVALID_HANDLE)                 \
  X(CUDA_ERROR_ILLEGAL_STATE)                  \
  X(CUDA_ERROR_LOSSY_QUERY)                    \
  X(CUDA_ERROR_NOT_FOUND)                      \
  X(CUDA_ERROR_NOT_READY)                      \
  X(CUDA_ERROR_ILLEGAL_ADDRESS)                \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)        \
  X(CUDA_ERROR_LAUNCH_TIMEOUT)                 \
  X(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING)  \
  X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)    \
  X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)        \
  X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE)         \
  X(CUDA_ERROR_CONTEXT_IS_DESTROYED)           \
  X(CUDA_ERROR_ASSERT)                         \
  X(CUDA_ERROR_TOO_MANY_PEERS)                 \
  X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) \
  X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)     \
  X(CUDA_ERROR_HARDWARE_STACK_ERROR)           \
  X(CUDA_ERROR_ILLEGAL_INSTRUCTION)            \
  X(CUDA_ERROR_MISALIGNED_ADDRESS)             \
  X(CUDA_ERROR_INVALID_ADDRESS_SPACE)          \
  X(CUDA_ERROR_INVALID_PC)                     \
  X(CUDA_ERROR_LAUNCH_FAILED)                  \
  X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)   \
  X(CUDA_ERROR_TENSOR_MEMORY_LEAK)             \
  X(CUDA_ERROR_NOT_PERMITTED)                  \
  X(CUDA_ERROR_NOT_SUPPORTED)                  \
  X(CUDA_ERROR_SYSTEM_NOT_READY)               \
  X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)         \
  X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) \
  X(CUDA_ERROR_MPS_CONNECTION_FAILED)          \
  X(CUDA_ERROR_MPS_RPC_FAILURE)                \
  X(CUDA_ERROR_MPS_SERVER_NOT_READY)           \
  X(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED)        \
  X(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED)    \
  X(CUDA_ERROR_MPS_CLIENT_TERMINATED)          \
  X(CUDA_ERROR_CDP_NOT_SUPPORTED)              \
  X(CUDA_ERROR_CDP_VERSION_MISMATCH)           \
  X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)     \
  X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)     \
  X(CUDA_ERROR_STREAM_CAPTURE_MERGE)           \
  X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)       \
  X(CUDA_ERROR_STREAM_CAPTURE_UNJOINED)        \
  X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION)       \
  X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)        \
  X(CUDA_ERROR_CAPTURED_EVENT)                 \
  X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)    \
  X(CUDA_ERROR_TIMEOUT)                        \
  X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)      \
  X(CUDA_ERROR_EXTERNAL_DEVICE)                \
  X(CUDA_ERROR_INVALID_CLUSTER_SIZE)           \
  X(CUDA_ERROR_FUNCTION_NOT_LOADED)            \
  X(CUDA_ERROR_INVALID_RESOURCE_TYPE)          \
  X(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION) \
  X(CUDA_ERROR_KEY_ROTATION)                   \
  X(CUDA_ERROR_UNKNOWN)

const char* Name(CUresult r) {
  switch (r) {
#define X(name) \
  case name:    \
    return #name;
    SIMGPU_CU_RESULTS(X)
#undef X
    default:
      return nullptr;
  }
}

// Descriptions: the common errors have a sentence; the others read their name in words
// ("CUDA_ERROR_NOT_MAPPED_AS_ARRAY" -> "not mapped as array").
const char* Description(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS:
      return "no error";
    case CUDA_ERROR_INVALID_VALUE:
      return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "initialization error (cuInit has not been called)";
    case CUDA_ERROR_NO_DEVICE:
      return "no CUDA-capable device is detected";
    case CUDA_ERROR_INVALID_DEVICE:
      return "invalid device ordinal";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "invalid device context";
    case CUDA_ERROR_INVALID_HANDLE:
      return "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND:
      return "named symbol not found";
    case CUDA_ERROR_NOT_READY:
      return "device not ready";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "operation not supported (by the simulated GPU)";
    case CUDA_ERROR_UNKNOWN:
      return "unknown error";
    default:
      break;
  }
  static std::string* texts = new std::string[1024];
  int index = static_cast<int>(r);
  if (index < 0 || index >= 1024) return nullptr;
  const char* name = Name(r);
  if (name == nullptr) return nullptr;
  std::string& t = texts[index];
  if (t.empty()) {
    const char* p = name + std::strlen("CUDA_ERROR_");
    for (; *p != '\0'; ++p) t += *p == '_' ? ' ' : static_cast<char>(std::tolower(*p));
  }
  return t.c_str();
}

}  // namespace
}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = Name(error);
  return *pStr == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

SIMGPU_API CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  *pStr = Description(error);
  return *pStr == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

SIMGPU_API CUresult cuProfilerInitialize(const char* configFile, const char* outputFile,
                                         CUoutput_mode outputMode) {
  (void)configFile;
  (void)outputFile;
  (void)outputMode;
  return CUDA_SUCCESS;
}
SIMGPU_API CUresult cuProfilerStart(void) { return CUDA_SUCCESS; }
SIMGPU_API CUresult cuProfilerStop(void) { return CUDA_SUCCESS; }
