#include "simgpu/driver/proc_table.h"

#include <atomic>
#include <cstring>

#include "common/log.h"

// Weak stubs: one per exported name. Each logs once that the call is not simulated.
#define SIMGPU_DRIVER_SYMBOL(name, base, version, kind)                                \
  extern "C" __attribute__((weak, visibility("default"))) int name() {                 \
    static std::atomic<bool> logged{false};                                            \
    if (!logged.exchange(true)) {                                                      \
      VGPU_LOG_WARN("%s is not simulated; returning CUDA_ERROR_NOT_SUPPORTED", #name); \
    }                                                                                  \
    return 801; /* CUDA_ERROR_NOT_SUPPORTED */                                         \
  }
#include "simgpu/gen/driver_symbols.inc"
#undef SIMGPU_DRIVER_SYMBOL

namespace vgpu::simgpu::driver {
namespace {

struct ProcEntry {
  const char* base;
  int version;
  int kind;  // 0 default, 1 _ptds, 2 _ptsz
  void* fn;  // the simulated entry point, or its stub if it is not simulated
};

#define SIMGPU_DRIVER_SYMBOL(name, base, version, kind) \
  {base, version, kind, reinterpret_cast<void*>(&name)},
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
  *status = ProcLookup::kFound;
  return pick->fn;
}

int DriverProcCount() { return static_cast<int>(sizeof(kTable) / sizeof(kTable[0])); }

}  // namespace vgpu::simgpu::driver
