// cuGetProcAddress support: maps the pointer the real driver returned for a symbol to this
// library's hook for the same entry point and ABI.
//
// Algorithm, for cuGetProcAddress(symbol, version, flags) after the real call succeeded with
// pointer P:
//   1. The candidates are the hooks whose base name is `symbol` (plus hooks.def aliases).
//      None: P is returned unchanged (not an intercepted function).
//   2. If P is the real address of one candidate (the driver returned an exported function), that
//      candidate's hook is returned: exact by construction.
//   3. Otherwise the driver returned an internal address; the candidate is chosen the way the
//      driver chooses: the per-thread-stream variant when flags ask for it (and one exists), else
//      the legacy one, with the highest `since` <= version. If the driver exports a newer
//      variant of the symbol than hooks.def knows (say cuMemAlloc_v3), the mapping would be a
//      guess, so P is returned unchanged and a warning is logged once.
#pragma once

#include "intercept/driver_api.h"

namespace vgpu::intercept {

// Looks up real exported symbols (dlsym on the driver library in libvgpu; a fake in tests).
using ExportLookup = void* (*)(const char* name);

void* HookForProcAddress(const char* symbol, void* real_pointer, int cuda_version, cuuint64_t flags,
                         const DriverApi& cuda, ExportLookup exports);

// The driver library handle used to look for newer variants (set once at initialisation).
void SetDriverHandleForProcAddress(void* handle);

}  // namespace vgpu::intercept
