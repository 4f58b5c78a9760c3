// The tenant program of `vgpu bench copy`: a CUDA driver API program that copies `--size` bytes
// at a time between pageable host memory and a device buffer and records the completion time of
// each. Each direction it copies (host to device, device to host, or both) has a thread and a
// stream of its own, as a workload that uploads and downloads at once has: the thread issues an
// asynchronous copy on its stream and synchronizes the stream, and again. So each direction runs
// at its own pace and one direction's cap never slows the other. It runs as `vgpu bench
// copy-tenant ...` in its own slice with libvgpu.so preloaded, so its copies are paced by the
// slice's caps.
//
// Protocol with the parent (as for `vgpu bench share`): it prints "ready" after initialisation,
// reads the start time (CLOCK_MONOTONIC ns) from stdin, copies from start + --offset-ns until
// start + --stop-ns, writes "dir end_ns bytes" per copy to --out and prints "done".
#include <dlfcn.h>
#include <time.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/child.h"
#include "bench/copy.h"

namespace vgpu::bench {
namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUstream = void*;

struct CopyDriver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(int*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(void**, int);
  CUresult (*cuCtxSetCurrent)(void*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
};

bool LoadCopyDriver(CopyDriver* d) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    std::fprintf(stderr, "vgpu bench copy-tenant: cannot load libcuda.so.1: %s\n", dlerror());
    return false;
  }
  bool ok = true;
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (fn == nullptr) {
      std::fprintf(stderr, "vgpu bench copy-tenant: the driver lacks %s\n", name);
      ok = false;
    }
  };
  get(d->cuInit, "cuInit");
  get(d->cuDeviceGet, "cuDeviceGet");
  get(d->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  get(d->cuCtxSetCurrent, "cuCtxSetCurrent");
  get(d->cuMemAlloc, "cuMemAlloc_v2");
  get(d->cuStreamCreate, "cuStreamCreate");
  get(d->cuStreamSynchronize, "cuStreamSynchronize");
  get(d->cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  get(d->cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  return ok;
}

void SleepUntilNs(uint64_t t) {
  timespec ts{static_cast<time_t>(t / 1000000000ULL), static_cast<long>(t % 1000000000ULL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

#define COPY_CHECK(call)                                                           \
  do {                                                                             \
    CUresult rc_ = (call);                                                         \
    if (rc_ != 0) {                                                                \
      std::fprintf(stderr, "vgpu bench copy-tenant: %s failed: %d\n", #call, rc_); \
      return EXIT_FAILURE;                                                         \
    }                                                                              \
  } while (0)

// One direction of the tenant: its own stream and buffers.
struct Direction {
  int dir = 0;  // 0 host to device, 1 device to host
  CUstream stream = nullptr;
  CUdeviceptr device = 0;
  std::vector<char> host;
  std::vector<CopyRecord> records;
  int failed_rc = 0;
  const char* failed_call = nullptr;
};

// Copies in one direction until `until`; the thread makes the context current first.
void CopyLoop(const CopyDriver& d, void* ctx, Direction* x, uint64_t size, uint64_t until) {
  auto fail = [&](const char* call, CUresult rc) {
    x->failed_call = call;
    x->failed_rc = rc;
  };
  if (CUresult rc = d.cuCtxSetCurrent(ctx); rc != 0) return fail("cuCtxSetCurrent", rc);
  while (MonotonicNs() < until) {
    CUresult rc = x->dir == 0 ? d.cuMemcpyHtoDAsync(x->device, x->host.data(), size, x->stream)
                              : d.cuMemcpyDtoHAsync(x->host.data(), x->device, size, x->stream);
    if (rc != 0) return fail(x->dir == 0 ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync", rc);
    if (rc = d.cuStreamSynchronize(x->stream); rc != 0) return fail("cuStreamSynchronize", rc);
    x->records.push_back({x->dir, MonotonicNs(), size});
  }
}

}  // namespace

int RunCopyTenant(const CopyTenantOptions& o) {
  const std::string& dir = o.dir;
  const uint64_t size = o.size;
  CopyDriver d{};
  if (!LoadCopyDriver(&d)) return EXIT_FAILURE;
  int dev = 0;
  void* ctx = nullptr;
  COPY_CHECK(d.cuInit(0));
  COPY_CHECK(d.cuDeviceGet(&dev, 0));
  COPY_CHECK(d.cuDevicePrimaryCtxRetain(&ctx, dev));
  COPY_CHECK(d.cuCtxSetCurrent(ctx));
  std::vector<Direction> dirs;
  if (dir != "d2h") dirs.push_back(Direction{});
  if (dir != "h2d") dirs.push_back(Direction{});
  if (dir == "d2h" || dirs.size() == 2) dirs.back().dir = 1;
  for (Direction& x : dirs) {
    COPY_CHECK(d.cuStreamCreate(&x.stream, 1));  // CU_STREAM_NON_BLOCKING
    COPY_CHECK(d.cuMemAlloc(&x.device, size));
    x.host.assign(size, 1);
    x.records.reserve(1 << 16);
  }
  std::printf("ready\n");
  std::fflush(stdout);
  uint64_t t0 = 0;
  if (std::scanf("%" SCNu64, &t0) != 1) return EXIT_FAILURE;
  SleepUntilNs(t0 + o.offset_ns);
  std::vector<std::thread> threads;
  for (Direction& x : dirs) {
    threads.emplace_back(CopyLoop, std::cref(d), ctx, &x, size, t0 + o.stop_ns);
  }
  for (std::thread& t : threads) t.join();
  for (const Direction& x : dirs) {
    if (x.failed_call != nullptr) {
      std::fprintf(stderr, "vgpu bench copy-tenant: %s failed: %d\n", x.failed_call, x.failed_rc);
      return EXIT_FAILURE;
    }
  }
  FILE* f = std::fopen(o.out.c_str(), "w");
  if (f == nullptr) return EXIT_FAILURE;
  for (const Direction& x : dirs) {
    for (const CopyRecord& r : x.records) {
      std::fprintf(f, "%d %" PRIu64 " %" PRIu64 "\n", r.dir, r.end_ns, r.bytes);
    }
  }
  if (std::fclose(f) != 0) return EXIT_FAILURE;
  std::printf("done\n");
  std::fflush(stdout);
  return EXIT_SUCCESS;
}

#undef COPY_CHECK  // the sources of a unity batch follow

}  // namespace vgpu::bench
