// The tenant program of `vgpu bench copy`: a CUDA driver API program that copies `--size` bytes
// at a time between pageable host memory and a device buffer with synchronous copies (host to
// device, device to host, or both in turn) and records the completion time of each. It runs as
// `vgpu bench copy-tenant ...` in its own slice with libvgpu.so preloaded, so its copies are
// paced by the slice's caps.
//
// Protocol with the parent (as for `vgpu bench share`): it prints "ready" after initialisation,
// reads the start time (CLOCK_MONOTONIC ns) from stdin, copies from start + --offset-ns until
// start + --stop-ns, writes "dir end_ns bytes" per copy to --out and prints "done".
#include <dlfcn.h>
#include <time.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/bench_child.h"
#include "cli/bench_copy.h"
#include "cli/cli_util.h"

namespace vgpu::cli {
namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

struct CopyDriver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(int*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(void**, int);
  CUresult (*cuCtxSetCurrent)(void*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
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
  get(d->cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  get(d->cuMemcpyDtoH, "cuMemcpyDtoH_v2");
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
      return kExitFailure;                                                         \
    }                                                                              \
  } while (0)

}  // namespace

int RunCopyTenant(int argc, char** argv) {
  std::string dir = "h2d", out;
  uint64_t size = 1 << 20, offset_ns = 0, stop_ns = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") {
      dir = v;
    } else if (k == "--size") {
      size = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--offset-ns") {
      offset_ns = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--stop-ns") {
      stop_ns = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--out") {
      out = v;
    } else {
      std::fprintf(stderr, "vgpu bench copy-tenant: unknown option %s\n", k.c_str());
      return kExitBadInput;
    }
  }
  if (out.empty() || stop_ns == 0 || size == 0 || (dir != "h2d" && dir != "d2h" && dir != "both")) {
    std::fprintf(stderr, "vgpu bench copy-tenant: --out, --stop-ns, --size, --dir are needed\n");
    return kExitBadInput;
  }
  CopyDriver d{};
  if (!LoadCopyDriver(&d)) return kExitFailure;
  int dev = 0;
  void* ctx = nullptr;
  CUdeviceptr buf = 0;
  COPY_CHECK(d.cuInit(0));
  COPY_CHECK(d.cuDeviceGet(&dev, 0));
  COPY_CHECK(d.cuDevicePrimaryCtxRetain(&ctx, dev));
  COPY_CHECK(d.cuCtxSetCurrent(ctx));
  COPY_CHECK(d.cuMemAlloc(&buf, size));
  std::vector<char> host(size, 1);
  std::printf("ready\n");
  std::fflush(stdout);
  uint64_t t0 = 0;
  if (std::scanf("%" SCNu64, &t0) != 1) return kExitFailure;
  SleepUntilNs(t0 + offset_ns);
  std::vector<CopyRecord> records;
  records.reserve(1 << 16);
  const bool up = dir != "d2h", down = dir != "h2d";
  while (MonotonicNs() < t0 + stop_ns) {
    if (up) {
      COPY_CHECK(d.cuMemcpyHtoD(buf, host.data(), size));
      records.push_back({0, MonotonicNs(), size});
    }
    if (down) {
      COPY_CHECK(d.cuMemcpyDtoH(host.data(), buf, size));
      records.push_back({1, MonotonicNs(), size});
    }
  }
  FILE* f = std::fopen(out.c_str(), "w");
  if (f == nullptr) return kExitFailure;
  for (const CopyRecord& r : records) {
    std::fprintf(f, "%d %" PRIu64 " %" PRIu64 "\n", r.dir, r.end_ns, r.bytes);
  }
  if (std::fclose(f) != 0) return kExitFailure;
  std::printf("done\n");
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace vgpu::cli
