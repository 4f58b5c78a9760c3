// Prototypes of the exported hooks, generated from hooks.def. Each hook is an extern "C"
// function with the driver's own name and signature; libvgpu.so exports exactly these (and
// dlsym). The definitions live in hook_*.cc.
//
// Contract of every hook: never throws, never exits or aborts, and reaches the driver only
// through the DriverApi/NvmlApi tables. When the real function is missing, a CUDA hook returns
// CUDA_ERROR_NOT_SUPPORTED and an NVML hook NVML_ERROR_FUNCTION_NOT_FOUND.
#pragma once

#include "intercept/driver_api.h"

#define VGPU_EXPORT __attribute__((visibility("default")))

namespace vgpu::intercept {

extern "C" {
#define VGPU_CUDA_HOOK(name, base, since, stream, params) VGPU_EXPORT CUresult name params noexcept;
#define VGPU_NVML_HOOK(name, params) VGPU_EXPORT nvmlReturn_t name params noexcept;
#include "intercept/hooks/hooks.def"
}

}  // namespace vgpu::intercept
