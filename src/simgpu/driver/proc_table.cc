#include "simgpu/driver/proc_table.h"

#include <atomic>
#include <cstring>

#include "common/log.h"

// One stub per exported name: it logs once that the call is not simulated and returns
// CUDA_ERROR_NOT_SUPPORTED. The exported name is a weak alias of its stub, so a simulated entry
// point (a strong definition elsewhere) replaces it at link time, and comparing the two addresses
// tells whether a name is simulated.
#define SIMGPU_DRIVER_SYMBOL(name, base, version, kind)                                         \
  extern "C" int vgpu_simgpu_unsimulated_##name() {                                             \
    static std::atomic<bool> logged{false};                                                     \
    if (!logged.exchange(true)) {                                                               \
      VGPU_LOG_WARN("%s is not simulated; returning CUDA_ERROR_NOT_SUPPORTED", #name);          \
    }                                                                                           \
    return 801; /* CUDA_ERROR_NOT_SUPPORTED */                                                  \
  }                                                                                             \
  extern "C"                                                                                    \
      __attribute__((weak, visibility("default"), alias("vgpu_simgpu_unsimulated_" #name))) int \
      name();
#include "simgpu/gen/driver_symbols.inc"
#undef SIMGPU_DRIVER_SYMBOL

namespace vgpu::simgpu::driver {
namespace {

struct ProcEntry {
  const char* base;
  int version;
  int kind;    // 0 default, 1 _ptds, 2 _ptsz
  void* fn;    // the exported entry point
  void* stub;  // its stub: equal to fn when the entry point is not simulated
};

#define SIMGPU_DRIVER_SYMBOL(name, base, version, kind) \
  {base, version, kind, reinterpret_cast<void*>(&name), \
   reinterpret_cast<void*>(&vgpu_simgpu_unsimulated_##name)},
const ProcEntry kTable[] = {
#include "simgpu/gen/driver_symbols.inc"
};
#undef SIMGPU_DRIVER_SYMBOL

}  // namespace

void* LookupDriverProc(const char* symbol, int version, bool per_thread, ProcLookup* status) {
  *status = ProcLookup::kSymbolNotFound;
  const ProcEntry* best[2] = {nullptr, nullptr};  // [0] default, [1] per-thread
  bool known = false;
  for (const ProcEntry& e : kTable) {
    if (std::strcmp(e.base, symbol) != 0) continue;
    known = true;
    if (e.version > version) continue;
    const ProcEntry*& slot = best[e.kind == 0 ? 0 : 1];
    if (slot == nullptr || e.version > slot->version) slot = &e;
  }
  const ProcEntry* pick = per_thread && best[1] != nullptr ? best[1] : best[0];
  if (pick == nullptr) {
    if (known) *status = ProcLookup::kVersionNotSufficient;
    return nullptr;
  }
  if (pick->fn == pick->stub) {
    *status = ProcLookup::kUnsimulated;
    return nullptr;
  }
  *status = ProcLookup::kFound;
  return pick->fn;
}

int DriverProcCount() { return static_cast<int>(sizeof(kTable) / sizeof(kTable[0])); }

}  // namespace vgpu::simgpu::driver
