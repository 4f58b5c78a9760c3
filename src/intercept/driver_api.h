// The DriverApi seam: every hook reaches the real driver through these tables of function
// pointers, generated from hooks.def. In the library they are loaded from libcuda.so.1 and
// libnvidia-ml.so.1 (driver_loader.cc); unit tests install fake tables instead.
//
// Also the hook name table (one row per exported hook), used by the dlsym override and by
// cuGetProcAddress to map a driver symbol to its hook.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/nvml_api.h"
#include "intercept/cuda_abi.h"

namespace vgpu::intercept {

using namespace ::vgpu::cuda;  // NOLINT: the CUDA ABI names are the vocabulary of this library

// Real CUDA driver entry points; null when the driver does not export one.
struct DriverApi {
#define VGPU_CUDA_HOOK(name, base, since, stream, params) CUresult(*name) params = nullptr;
#define VGPU_CUDA_REAL(name, params) CUresult(*name) params = nullptr;
#include "intercept/hooks/hooks.def"
};

// Real NVML entry points; null when the library does not export one.
struct NvmlApi {
#define VGPU_NVML_HOOK(name, params) nvmlReturn_t(*name) params = nullptr;
#define VGPU_NVML_REAL(name, params) nvmlReturn_t(*name) params = nullptr;
#include "intercept/hooks/hooks.def"
};

enum class StreamKind : uint8_t { kLegacy, kPerThread };

// One exported hook.
struct HookInfo {
  const char* name;    // exported symbol, e.g. "cuMemAlloc_v2"
  const char* base;    // name given to cuGetProcAddress, e.g. "cuMemAlloc" ("" for NVML)
  int since;           // CUDA version from which cuGetProcAddress(base) returns this variant
  StreamKind stream;   // legacy or per-thread default stream variant
  bool nvml;           // true for NVML hooks
  void* hook;          // address of the hook in this library
  size_t real_offset;  // offset of the real pointer in DriverApi (or NvmlApi when nvml)
};

// An extra cuGetProcAddress mapping: `base` from version `since` is served by hook `name`.
struct HookAlias {
  const char* base;
  int since;
  StreamKind stream;
  const char* name;
};

std::span<const HookInfo> AllHooks();
std::span<const HookAlias> AllAliases();

// The hook exported as `name`, or nullptr. Exact match ("cuMemAlloc_v2", not "cuMemAlloc").
const HookInfo* FindHook(const char* name);

// The real function behind `hook` in the given tables (nullptr if the driver lacks it).
void* RealFunction(const HookInfo& hook, const DriverApi& cuda, const NvmlApi& nvml);

// Fills `api` by looking every entry up with `lookup(handle, name)`. Returns how many entries
// were found.
using SymbolLookup = void* (*)(void* handle, const char* name);
int LoadDriverApi(void* handle, SymbolLookup lookup, DriverApi* api);
int LoadNvmlApi(void* handle, SymbolLookup lookup, NvmlApi* api);

}  // namespace vgpu::intercept
