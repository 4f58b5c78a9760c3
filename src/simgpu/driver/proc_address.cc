// cuGetProcAddress and cuGetProcAddress_v2: entry points by base name and CUDA version, the way
// the CUDA runtime asks for them. The version picks among _v2/_v3 variants (the newest one that
// existed in that version); CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM picks the _ptds/_ptsz
// variant where there is one. An entry point that is exported but not simulated is answered
// CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, so that the runtime reports it as missing instead of
// calling a stub. Every lookup goes to the request log (request_log.h).
#include <atomic>

#include "common/log.h"
#include "simgpu/driver/driver.h"
#include "simgpu/driver/proc_table.h"
#include "simgpu/driver/request_log.h"

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
  static constexpr const char* kResults[] = {"found", "not-found", "version-not-sufficient",
                                             "unsimulated"};
  LogRequest("proc %s %d %#llx %s", symbol[0] != '\0' ? symbol : "\"\"", version,
             static_cast<unsigned long long>(flags), kResults[static_cast<int>(lookup)]);
  if (lookup == ProcLookup::kUnsimulated) {
    static std::atomic<int> warned{0};
    if (warned.fetch_add(1) < 32) {
      VGPU_LOG_DEBUG("cuGetProcAddress(%s, %d): not simulated; answered not found", symbol,
                     version);
    }
  }
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
