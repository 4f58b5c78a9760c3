// The name table and the table loaders, generated from hooks.def.
#include <cstring>

#include "intercept/driver_api.h"
#include "intercept/hooks/hooks.h"

namespace vgpu::intercept {
namespace {

const HookInfo kHooks[] = {
#define VGPU_CUDA_HOOK(name, base, since, stream, params) \
  {#name,                                                 \
   #base,                                                 \
   since,                                                 \
   StreamKind::stream,                                    \
   false,                                                 \
   reinterpret_cast<void*>(&name),                        \
   offsetof(DriverApi, name)},
#define VGPU_NVML_HOOK(name, params) \
  {#name,                            \
   "",                               \
   0,                                \
   StreamKind::kLegacy,              \
   true,                             \
   reinterpret_cast<void*>(&name),   \
   offsetof(NvmlApi, name)},
#include "intercept/hooks/hooks.def"
};

const HookAlias kAliases[] = {
#define VGPU_CUDA_ALIAS(base, since, stream, name) {#base, since, StreamKind::stream, #name},
#include "intercept/hooks/hooks.def"
};

}  // namespace

std::span<const HookInfo> AllHooks() { return kHooks; }
std::span<const HookAlias> AllAliases() { return kAliases; }

const HookInfo* FindHook(const char* name) {
  if (name == nullptr) return nullptr;
  for (const HookInfo& h : kHooks) {
    if (std::strcmp(h.name, name) == 0) return &h;
  }
  return nullptr;
}

void* RealFunction(const HookInfo& hook, const DriverApi& cuda, const NvmlApi& nvml) {
  const char* base =
      hook.nvml ? reinterpret_cast<const char*>(&nvml) : reinterpret_cast<const char*>(&cuda);
  void* fn;
  std::memcpy(&fn, base + hook.real_offset, sizeof(fn));
  return fn;
}

int LoadDriverApi(void* handle, SymbolLookup lookup, DriverApi* api) {
  int found = 0;
#define VGPU_LOAD(name)                                                     \
  api->name = reinterpret_cast<decltype(api->name)>(lookup(handle, #name)); \
  found += api->name != nullptr;
#define VGPU_CUDA_HOOK(name, base, since, stream, params) VGPU_LOAD(name)
#define VGPU_CUDA_REAL(name, params) VGPU_LOAD(name)
#include "intercept/hooks/hooks.def"
  return found;
}

int LoadNvmlApi(void* handle, SymbolLookup lookup, NvmlApi* api) {
  int found = 0;
#define VGPU_NVML_HOOK(name, params) VGPU_LOAD(name)
#define VGPU_NVML_REAL(name, params) VGPU_LOAD(name)
#include "intercept/hooks/hooks.def"
#undef VGPU_LOAD
  return found;
}

}  // namespace vgpu::intercept
