// The dlsym override (libvgpu.so only). Programs that look the driver up by name
// (dlopen("libcuda.so.1") + dlsym, ctypes, the CUDA runtime fetching cuGetProcAddress) get this
// library's hook for every hooked name the real lookup would have found.
//
// The exported `dlsym` is a small assembly trampoline (dlsym_trampoline.S): it asks
// vgpu_DlsymHookFor() for a hook and otherwise *jumps* to the real dlsym with the caller's
// return address untouched, so RTLD_NEXT keeps meaning "after the caller" for every other name.
// The real dlsym is found with dlvsym (runtime.cc), never through the override itself.
#include <cstring>

#include "intercept/driver_api.h"
#include "intercept/runtime.h"

// Not instrumented by sanitizers (see ResolveRealDlsym): sanitizer runtimes look functions up
// with dlsym before they are ready to run instrumented code. Only cu* and nvml* names go further.
extern "C"
    __attribute__((visibility("hidden"), no_sanitize("address", "thread", "undefined"))) void*
    vgpu_DlsymHookFor(void* handle, const char* name) {
  using namespace vgpu::intercept;
  // Resolve the real dlsym first: the trampoline jumps to it when we return null.
  EnsureRealDlsym();
  if (name == nullptr) return nullptr;
  bool cuda = name[0] == 'c' && name[1] == 'u';
  bool nvml = name[0] == 'n' && name[1] == 'v' && name[2] == 'm' && name[3] == 'l';
  if (!cuda && !nvml) return nullptr;
  const HookInfo* hook = FindHook(name);
  if (hook == nullptr) return nullptr;
  // Only where the real lookup finds the symbol: a probe for an absent symbol stays absent.
  if (RealDlsym(handle, name) == nullptr) return nullptr;
  return hook->hook;
}

#if !defined(__x86_64__) && !defined(__aarch64__)
// Portable fallback without the tail jump: RTLD_NEXT lookups of other names are resolved
// relative to libvgpu instead of the caller.
extern "C" __attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  void* hook = vgpu_DlsymHookFor(handle, name);
  return hook != nullptr ? hook : vgpu::intercept::RealDlsym(handle, name);
}
#endif
