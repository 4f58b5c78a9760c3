// The table of every exported driver entry point (gen/driver_symbols.inc) and the lookup that
// cuGetProcAddress uses. Kept apart from cuda.h: the table refers to each entry point by name
// only, and entry points that are not simulated are defined here as weak stubs that return
// CUDA_ERROR_NOT_SUPPORTED (a simulated one, defined elsewhere, replaces its stub at link time).
#pragma once

namespace vgpu::simgpu::driver {

enum class ProcLookup {
  kFound = 0,
  kSymbolNotFound = 1,
  kVersionNotSufficient = 2,
  kUnsimulated = 3,  // exported (as a stub) but not simulated: not handed out
};

// The entry point `symbol` (a base name such as "cuMemAlloc") as of CUDA version `version`,
// in its per-thread default stream variant when `per_thread` and one exists. Null if none, or if
// the variant chosen is not simulated.
void* LookupDriverProc(const char* symbol, int version, bool per_thread, ProcLookup* status);

// Number of exported entry points.
int DriverProcCount();

}  // namespace vgpu::simgpu::driver
