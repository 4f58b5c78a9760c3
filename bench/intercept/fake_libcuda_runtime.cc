// A minimal fake libcuda.so.1 under NVIDIA's CUDA runtime, for measuring what libvgpu adds to
// cudaLaunchKernel and to cudaMalloc + cudaFree (runtime_bench.cu). The runtime needs a whole
// driver to start (export tables, contexts, modules), so everything is the simulated driver's
// (src/simgpu) except the calls measured: the kernel launches, cuMemAlloc_v2 and cuMemFree_v2
// here do the least they can (a bump pointer for allocations), as in fake_libcuda.cc.
//
// How it is put together (bench/intercept/CMakeLists.txt): this library is libcuda.so.1 in a
// directory of its own, and needs libvgpu_bench_simcuda.so, a link in the same directory to the
// simulated libcuda.so.1. A lookup in this library (dlsym on its handle, as libvgpu loads its
// table of real functions) finds the calls measured here and everything else in the simulated
// driver. cuGetProcAddress (how the runtime gets every entry point) asks the simulated driver and
// replaces its answer by this library's function where it is one of those defined here, as a real
// driver returns its exported functions.
//
// vgpu_bench_fake_calls(launches, allocs) reports how many calls reached the fake functions, so
// that the benchmark can tell it measured them and not the simulated driver's.
#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace {

uint64_t g_next = 0x7f0000000000ULL;
// Single-threaded benchmark: a relaxed load and store, no read-modify-write.
std::atomic<uint64_t> g_launches{0};
std::atomic<uint64_t> g_allocs{0};

void Count(std::atomic<uint64_t>& c) {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace

extern "C" {

#define VGPU_FAKE_EXPORT __attribute__((visibility("default")))

VGPU_FAKE_EXPORT int cuMemAlloc_v2(unsigned long long* dptr, size_t bytes) {
  *dptr = g_next;
  g_next += (bytes + 255) & ~255ULL;
  Count(g_allocs);
  return 0;
}
VGPU_FAKE_EXPORT int cuMemFree_v2(unsigned long long) { return 0; }

VGPU_FAKE_EXPORT int cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, void*, void**, void**) {
  Count(g_launches);
  return 0;
}
VGPU_FAKE_EXPORT int cuLaunchKernel_ptsz(void*, unsigned, unsigned, unsigned, unsigned, unsigned,
                                         unsigned, unsigned, void*, void**, void**) {
  Count(g_launches);
  return 0;
}
VGPU_FAKE_EXPORT int cuLaunchKernelEx(const void*, void*, void**, void**) {
  Count(g_launches);
  return 0;
}
VGPU_FAKE_EXPORT int cuLaunchKernelEx_ptsz(const void*, void*, void**, void**) {
  Count(g_launches);
  return 0;
}

VGPU_FAKE_EXPORT void vgpu_bench_fake_calls(uint64_t* launches, uint64_t* allocs) {
  *launches = g_launches.load(std::memory_order_relaxed);
  *allocs = g_allocs.load(std::memory_order_relaxed);
}

int cuGetProcAddress(const char*, void**, int, uint64_t);
int cuGetProcAddress_v2(const char*, void**, int, uint64_t, int*);

}  // extern "C"

namespace {

using ProcV1 = int (*)(const char*, void**, int, uint64_t);
using ProcV2 = int (*)(const char*, void**, int, uint64_t, int*);

struct Replacement {
  const char* name;
  void* fake;
  void* simulated;  // the simulated driver's function of the same name
};

Replacement g_replacements[] = {
    {"cuMemAlloc_v2", reinterpret_cast<void*>(&cuMemAlloc_v2), nullptr},
    {"cuMemFree_v2", reinterpret_cast<void*>(&cuMemFree_v2), nullptr},
    {"cuLaunchKernel", reinterpret_cast<void*>(&cuLaunchKernel), nullptr},
    {"cuLaunchKernel_ptsz", reinterpret_cast<void*>(&cuLaunchKernel_ptsz), nullptr},
    {"cuLaunchKernelEx", reinterpret_cast<void*>(&cuLaunchKernelEx), nullptr},
    {"cuLaunchKernelEx_ptsz", reinterpret_cast<void*>(&cuLaunchKernelEx_ptsz), nullptr},
    {"cuGetProcAddress", reinterpret_cast<void*>(&cuGetProcAddress), nullptr},
    {"cuGetProcAddress_v2", reinterpret_cast<void*>(&cuGetProcAddress_v2), nullptr},
};

ProcV1 g_sim_v1 = nullptr;
ProcV2 g_sim_v2 = nullptr;

// The simulated driver's functions, looked up with the C library's own dlsym: with libvgpu.so
// preloaded, dlsym answers a hooked name with libvgpu's hook, which would call back into here.
__attribute__((constructor)) void Resolve() {
  using DlsymFn = void* (*)(void*, const char*);
  DlsymFn real_dlsym = nullptr;
  for (const char* v : {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"}) {
    real_dlsym = reinterpret_cast<DlsymFn>(dlvsym(RTLD_DEFAULT, "dlsym", v));
    if (real_dlsym != nullptr) break;
  }
  void* sim = dlopen("libvgpu_bench_simcuda.so", RTLD_NOW | RTLD_NOLOAD);
  if (real_dlsym == nullptr || sim == nullptr) return;
  for (Replacement& r : g_replacements) r.simulated = real_dlsym(sim, r.name);
  g_sim_v1 = reinterpret_cast<ProcV1>(real_dlsym(sim, "cuGetProcAddress"));
  g_sim_v2 = reinterpret_cast<ProcV2>(real_dlsym(sim, "cuGetProcAddress_v2"));
}

void Replace(void** pfn) {
  if (*pfn == nullptr) return;
  for (const Replacement& r : g_replacements) {
    if (*pfn == r.simulated) {
      *pfn = r.fake;
      return;
    }
  }
}

constexpr int kNotFound = 500;  // CUDA_ERROR_NOT_FOUND

}  // namespace

extern "C" {

VGPU_FAKE_EXPORT int cuGetProcAddress(const char* symbol, void** pfn, int version, uint64_t flags) {
  if (g_sim_v1 == nullptr) return kNotFound;
  int rc = g_sim_v1(symbol, pfn, version, flags);
  if (rc == 0) Replace(pfn);
  return rc;
}

VGPU_FAKE_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                         uint64_t flags, int* status) {
  if (g_sim_v2 == nullptr) return kNotFound;
  int rc = g_sim_v2(symbol, pfn, version, flags, status);
  if (rc == 0) Replace(pfn);
  return rc;
}

}  // extern "C"
