// The tenant program of the oversubscription scenario (tests/oversub/oversub_test.sh,
// docs/oversubscription.md), run as `vgpu bench oversub-tenant` inside a `vgpu run` slice: a
// CUDA driver API program that allocates --bytes in chunks of --chunk with cuMemAlloc (so
// libvgpu.so's spill path decides what is device memory and what is managed memory), then from
// the CLOCK_REALTIME instant --start-at-ns for --seconds launches, round after round, one
// "sim_touch" kernel of --kernel-ns per chunk that touches the whole chunk (the simulated GPU's
// convention: managed pages fault in first), synchronizing every --depth rounds (default 4, so
// that the device never waits for the host between rounds). It prints
//   rounds=N device_bytes=D managed_bytes=M seconds=S rate=R
// where M is what the driver reports as managed (CU_POINTER_ATTRIBUTE_IS_MANAGED) and R the
// rounds completed per second.
#include <dlfcn.h>
#include <time.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/child.h"
#include "bench/oversub.h"

namespace vgpu::bench {
namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
constexpr int kIsManaged = 8;  // CU_POINTER_ATTRIBUTE_IS_MANAGED

struct TouchDriver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(int*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(void**, int);
  CUresult (*cuCtxSetCurrent)(void*);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuPointerGetAttribute)(void*, int, CUdeviceptr);
  CUresult (*cuModuleLoadData)(void**, const void*);
  CUresult (*cuModuleGetFunction)(void**, void*, const char*);
  CUresult (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, void*, void**, void**);
};

bool LoadTouchDriver(TouchDriver* d) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    std::fprintf(stderr, "vgpu bench oversub-tenant: cannot load libcuda.so.1: %s\n", dlerror());
    return false;
  }
  bool ok = true;
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (fn == nullptr) {
      std::fprintf(stderr, "vgpu bench oversub-tenant: the driver lacks %s\n", name);
      ok = false;
    }
  };
  get(d->cuInit, "cuInit");
  get(d->cuDeviceGet, "cuDeviceGet");
  get(d->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  get(d->cuCtxSetCurrent, "cuCtxSetCurrent");
  get(d->cuCtxSynchronize, "cuCtxSynchronize");
  get(d->cuMemAlloc, "cuMemAlloc_v2");
  get(d->cuPointerGetAttribute, "cuPointerGetAttribute");
  get(d->cuModuleLoadData, "cuModuleLoadData");
  get(d->cuModuleGetFunction, "cuModuleGetFunction");
  get(d->cuLaunchKernel, "cuLaunchKernel");
  return ok;
}

// The wall clock (CLOCK_REALTIME, what --start-at-ns counts) in nanoseconds.
uint64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

#define TOUCH_CHECK(call)                                                             \
  do {                                                                                \
    CUresult rc_ = (call);                                                            \
    if (rc_ != 0) {                                                                   \
      std::fprintf(stderr, "vgpu bench oversub-tenant: %s failed: %d\n", #call, rc_); \
      return EXIT_FAILURE;                                                            \
    }                                                                                 \
  } while (0)

}  // namespace

int RunOversubTenant(const OversubTenantOptions& o) {
  uint64_t bytes = o.bytes, chunk = o.chunk, kernel_ns = o.kernel_ns, depth = o.depth;
  TouchDriver d{};
  if (!LoadTouchDriver(&d)) return EXIT_FAILURE;
  int dev = 0;
  void* ctx = nullptr;
  void* module = nullptr;
  void* touch = nullptr;
  TOUCH_CHECK(d.cuInit(0));
  TOUCH_CHECK(d.cuDeviceGet(&dev, 0));
  TOUCH_CHECK(d.cuDevicePrimaryCtxRetain(&ctx, dev));
  TOUCH_CHECK(d.cuCtxSetCurrent(ctx));
  TOUCH_CHECK(d.cuModuleLoadData(&module, "sim_touch"));
  TOUCH_CHECK(d.cuModuleGetFunction(&touch, module, "sim_touch"));
  std::vector<CUdeviceptr> chunks;
  uint64_t managed = 0, device = 0;
  for (uint64_t done = 0; done < bytes; done += chunk) {
    uint64_t n = bytes - done < chunk ? bytes - done : chunk;
    CUdeviceptr p = 0;
    TOUCH_CHECK(d.cuMemAlloc(&p, n));
    unsigned is_managed = 0;
    TOUCH_CHECK(d.cuPointerGetAttribute(&is_managed, kIsManaged, p));
    (is_managed != 0 ? managed : device) += n;
    chunks.push_back(p);
  }
  if (o.start_at_ns != 0) {
    uint64_t now = RealtimeNs();
    if (o.start_at_ns > now) {
      uint64_t wait = o.start_at_ns - now;
      timespec ts{static_cast<time_t>(wait / 1'000'000'000ULL),
                  static_cast<long>(wait % 1'000'000'000ULL)};
      nanosleep(&ts, nullptr);
    }
  }
  uint64_t t0 = MonotonicNs();
  uint64_t end = t0 + static_cast<uint64_t>(o.seconds * 1e9);
  uint64_t rounds = 0;
  while (MonotonicNs() < end) {
    for (size_t i = 0; i < chunks.size(); ++i) {
      CUdeviceptr p = chunks[i];
      uint64_t n = i + 1 < chunks.size() ? chunk : bytes - chunk * i;
      void* args[] = {&kernel_ns, &p, &n};
      TOUCH_CHECK(d.cuLaunchKernel(touch, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr));
    }
    if (++rounds % depth == 0) TOUCH_CHECK(d.cuCtxSynchronize());
  }
  TOUCH_CHECK(d.cuCtxSynchronize());
  double took = static_cast<double>(MonotonicNs() - t0) / 1e9;
  std::printf("rounds=%" PRIu64 " device_bytes=%" PRIu64 " managed_bytes=%" PRIu64
              " seconds=%.3f rate=%.2f\n",
              rounds, device, managed, took, static_cast<double>(rounds) / took);
  return EXIT_SUCCESS;
}

#undef TOUCH_CHECK  // the sources of a unity batch follow

}  // namespace vgpu::bench
