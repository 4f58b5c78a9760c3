// NVML entry points that are exported but not simulated return NVML_ERROR_NOT_SUPPORTED, as a
// real driver does for features a GPU lacks. Defined weak: a simulated definition elsewhere wins.
#include <atomic>

#include "common/log.h"

#define SIMGPU_NVML_SYMBOL(name, status)                                                \
  extern "C" __attribute__((weak, visibility("default"))) int name() {                  \
    static std::atomic<bool> logged{false};                                             \
    if (!logged.exchange(true)) {                                                       \
      VGPU_LOG_DEBUG("%s is not simulated; returning NVML_ERROR_NOT_SUPPORTED", #name); \
    }                                                                                   \
    return 3; /* NVML_ERROR_NOT_SUPPORTED */                                            \
  }
#include "simgpu/gen/nvml_symbols.inc"
#undef SIMGPU_NVML_SYMBOL
