// cuGetProcAddress and cuGetProcAddress_v2: entry points by base name and CUDA version, the way
// the CUDA runtime asks for them. The version picks among _v2/_v3 variants (the newest one that
// existed in that version); CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM picks the _ptds/_ptsz
// variant where there is one.
#include "simgpu/driver/driver.h"
#include "simgpu/driver/proc_table.h"

namespace vgpu::simgpu::driver {
namespace {

CUresult GetProc(const char* symbol, void** pfn, int version, cuuint64_t flags,
                 CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr cuuint64_t kKnown =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  ProcLookup lookup;
  *pfn = LookupDriverProc(symbol, version, per_thread, &lookup);
  if (status != nullptr) {
    *status = lookup == ProcLookup::kFound ? CU_GET_PROC_ADDRESS_SUCCESS
              : lookup == ProcLookup::kVersionNotSufficient
                  ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                  : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return *pfn != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // namespace
}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                        cuuint64_t flags,
                                        CUdriverProcAddressQueryResult* symbolStatus) {
  SIMGPU_GUARD({ return GetProc(symbol, pfn, cudaVersion, flags, symbolStatus); });
}

SIMGPU_API CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                     cuuint64_t flags) {
  SIMGPU_GUARD({ return GetProc(symbol, pfn, cudaVersion, flags, nullptr); });
}
