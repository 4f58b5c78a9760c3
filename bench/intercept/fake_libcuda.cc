// A minimal fake libcuda.so.1 for measuring what libvgpu adds to a call: every function does the
// least it can (a bump pointer for allocations). Each is also exported under a second name,
// vgpu_bench_real_<name>, so that the benchmark can call the driver directly, past libvgpu.
#include <cstddef>
#include <cstdint>

extern "C" {

#define VGPU_BENCH_EXPORT(name) \
  __attribute__((visibility("default"), alias(#name))) decltype(name) vgpu_bench_real_##name;

static uint64_t g_next = 0x7f0000000000ULL;

__attribute__((visibility("default"))) int cuInit(unsigned int) { return 0; }
__attribute__((visibility("default"))) int cuCtxGetCurrent(void** ctx) {
  *ctx = reinterpret_cast<void*>(0x1000);
  return 0;
}
__attribute__((visibility("default"))) int cuCtxGetDevice(int* dev) {
  *dev = 0;
  return 0;
}
__attribute__((visibility("default"))) int cuMemAlloc_v2(unsigned long long* dptr, size_t bytes) {
  *dptr = g_next;
  g_next += (bytes + 255) & ~255ULL;
  return 0;
}
__attribute__((visibility("default"))) int cuMemFree_v2(unsigned long long) { return 0; }
__attribute__((visibility("default"))) int cuMemGetInfo_v2(size_t* free, size_t* total) {
  *free = *total = 80ULL << 30;
  return 0;
}
__attribute__((visibility("default"))) int cuLaunchKernel(void*, unsigned, unsigned, unsigned,
                                                          unsigned, unsigned, unsigned, unsigned,
                                                          void*, void**, void**) {
  return 0;
}

__attribute__((visibility("default"))) int cuMemcpyHtoDAsync_v2(unsigned long long, const void*,
                                                                size_t, void*) {
  return 0;
}

VGPU_BENCH_EXPORT(cuMemAlloc_v2)
VGPU_BENCH_EXPORT(cuMemcpyHtoDAsync_v2)
VGPU_BENCH_EXPORT(cuMemFree_v2)
VGPU_BENCH_EXPORT(cuLaunchKernel)
VGPU_BENCH_EXPORT(cuMemGetInfo_v2)

}  // extern "C"
