// One tenant of `vgpu bench share`: a CUDA driver API program that launches busy kernels and
// records, for each, when the launch was called and when the kernel ran. It runs as
// `vgpu bench tenant ...` in its own slice, with libvgpu.so preloaded (the parent sets it up).
//
// The kernel is `sim_sleep_ns(uint64 ns)`: on the simulated GPU any module image works and the
// kernel runs for `ns` (docs/simgpu.md); on a real GPU the built-in PTX spins on %globaltimer for
// `ns`, or --module loads a compiled kernel of that name (tests/gpu/spin_kernel.cu: clock64
// spin, calibrated with --cycles-per-us into its `vgpu_cycles_per_us` global).
//
// Protocol with the parent: after initialisation it prints "ready" on stdout and reads the start
// time (CLOCK_MONOTONIC ns) from stdin; it runs from start + --offset to start + --stop and writes
// "call_ns start_ns end_ns" per kernel to --out.
//
// Shapes: by default it keeps --depth kernels in flight (launches until it has that many, then
// waits for the oldest); with --gap it launches one kernel, waits for it and spends --gap on the
// host; with --sync N it launches N kernels, waits for them with cuStreamSynchronize, spends
// --gap (if any) on the host, and again, as an inference loop does. Kernel times come from events:
// an event after each kernel gives its end on the host clock (through a reference event recorded on
// an idle stream), and its start is end - duration.
#include <dlfcn.h>
#include <sys/prctl.h>
#include <time.h>

#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "bench/child.h"
#include "bench/share_tenant.h"

namespace vgpu::bench {
namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUevent = void*;
using CUgraph = void*;
using CUgraphExec = void*;
using CUdeviceptr = unsigned long long;

struct LaunchConfig {  // CUlaunchConfig
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_mem;
  CUstream stream;
  void* attrs;
  unsigned num_attrs;
};

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuModuleGetGlobal)(CUdeviceptr*, size_t*, CUmodule, const char*);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamSynchronize_ptsz)(CUstream);
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventRecord_ptsz)(CUevent, CUstream);
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuLaunchKernel_ptsz)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void**, void**);
  CUresult (*cuLaunchKernelEx)(const LaunchConfig*, CUfunction, void**, void**);
  CUresult (*cuLaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void**);
};

// A kernel that spins on the GPU's nanosecond timer for its argument.
const char kSpinPtx[] = R"(.version 6.0
.target sm_50
.address_size 64
.visible .entry sim_sleep_ns(.param .u64 ns)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [ns];
  mov.u64 %rd2, %globaltimer;
LOOP:
  mov.u64 %rd3, %globaltimer;
  sub.s64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p1, %rd4, %rd1;
  @%p1 bra LOOP;
  ret;
}
)";

void SleepUntil(uint64_t t) {
  timespec ts{static_cast<time_t>(t / 1000000000ULL), static_cast<long>(t % 1000000000ULL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

bool LoadDriver(Driver* d, std::string* error) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    *error = std::string("cannot load libcuda.so.1: ") + dlerror();
    return false;
  }
  bool ok = true;
  auto get = [&](auto& fn, const char* name, bool required = true) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (fn == nullptr && required) {
      *error += std::string(error->empty() ? "" : ", ") + name;
      ok = false;
    }
  };
  get(d->cuInit, "cuInit");
  get(d->cuDeviceGet, "cuDeviceGet");
  get(d->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  get(d->cuCtxSetCurrent, "cuCtxSetCurrent");
  get(d->cuModuleLoadData, "cuModuleLoadData");
  get(d->cuModuleGetFunction, "cuModuleGetFunction");
  get(d->cuModuleGetGlobal, "cuModuleGetGlobal_v2", false);
  get(d->cuMemcpyHtoD, "cuMemcpyHtoD_v2", false);
  get(d->cuStreamCreate, "cuStreamCreate");
  get(d->cuStreamSynchronize, "cuStreamSynchronize");
  get(d->cuStreamSynchronize_ptsz, "cuStreamSynchronize_ptsz", false);
  get(d->cuStreamBeginCapture, "cuStreamBeginCapture_v2", false);
  get(d->cuStreamEndCapture, "cuStreamEndCapture", false);
  get(d->cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", false);
  get(d->cuGraphLaunch, "cuGraphLaunch", false);
  get(d->cuEventCreate, "cuEventCreate");
  get(d->cuEventRecord, "cuEventRecord");
  get(d->cuEventRecord_ptsz, "cuEventRecord_ptsz", false);
  get(d->cuEventQuery, "cuEventQuery");
  get(d->cuEventSynchronize, "cuEventSynchronize");
  get(d->cuEventElapsedTime, "cuEventElapsedTime");
  get(d->cuLaunchKernel, "cuLaunchKernel");
  get(d->cuLaunchKernel_ptsz, "cuLaunchKernel_ptsz", false);
  get(d->cuLaunchKernelEx, "cuLaunchKernelEx", false);
  get(d->cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", false);
  if (!ok) *error = "the driver lacks " + *error;
  return ok;
}

#define TENANT_CHECK(call)                                                    \
  do {                                                                        \
    CUresult rc_ = (call);                                                    \
    if (rc_ != 0) {                                                           \
      std::fprintf(stderr, "vgpu bench tenant: %s failed: %d\n", #call, rc_); \
      return EXIT_FAILURE;                                                    \
    }                                                                         \
  } while (0)

// Times the module's kernel at an assumed 1000 cycles/us and prints the real rate: the kernel's
// clock64 spin then lasts the nanoseconds it is given.
int Calibrate(const Driver& d, CUmodule mod, CUfunction f, CUstream stream) {
  CUdeviceptr global = 0;
  size_t size = 0;
  if (d.cuModuleGetGlobal == nullptr || d.cuMemcpyHtoD == nullptr ||
      d.cuModuleGetGlobal(&global, &size, mod, "vgpu_cycles_per_us") != 0 ||
      size != sizeof(uint64_t)) {
    std::fprintf(stderr, "vgpu bench tenant: the module has no vgpu_cycles_per_us\n");
    return EXIT_FAILURE;
  }
  uint64_t assumed = 1000;
  TENANT_CHECK(d.cuMemcpyHtoD(global, &assumed, sizeof assumed));
  CUevent a, b;
  TENANT_CHECK(d.cuEventCreate(&a, 0));
  TENANT_CHECK(d.cuEventCreate(&b, 0));
  uint64_t ns = 20000000;  // 2e7 cycles at the assumed rate
  void* params[] = {&ns};
  float best = 0;
  for (int i = 0; i < 5; ++i) {
    TENANT_CHECK(d.cuEventRecord(a, stream));
    TENANT_CHECK(d.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr));
    TENANT_CHECK(d.cuEventRecord(b, stream));
    TENANT_CHECK(d.cuEventSynchronize(b));
    float ms = 0;
    TENANT_CHECK(d.cuEventElapsedTime(&ms, a, b));
    if (i > 0 && (best == 0 || ms < best)) best = ms;  // the first run warms up
  }
  if (best <= 0) {
    std::fprintf(stderr, "vgpu bench tenant: the kernel took no time\n");
    return EXIT_FAILURE;
  }
  double cycles = static_cast<double>(ns) * static_cast<double>(assumed) / 1000.0;
  std::printf("%.0f\n", cycles / (static_cast<double>(best) * 1000.0));
  return EXIT_SUCCESS;
}

}  // namespace

int RunShareTenant(const ShareTenantOptions& o) {
  // Sleeps (the simulated GPU's synchronisations, the gap between kernels) end on time rather
  // than up to the default 50 us timer slack late: a CUDA program's synchronisation spins before
  // it blocks, so it sees a kernel's end within microseconds.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  Driver d{};
  std::string error;
  if (!LoadDriver(&d, &error)) {
    std::fprintf(stderr, "vgpu bench tenant: %s\n", error.c_str());
    return EXIT_FAILURE;
  }
  CUdevice dev;
  CUcontext ctx;
  TENANT_CHECK(d.cuInit(0));
  TENANT_CHECK(d.cuDeviceGet(&dev, 0));
  TENANT_CHECK(d.cuDevicePrimaryCtxRetain(&ctx, dev));
  TENANT_CHECK(d.cuCtxSetCurrent(ctx));
  std::string image = kSpinPtx;
  if (!o.module.empty()) {
    std::ifstream in(o.module, std::ios::binary);
    image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (image.empty()) {
      std::fprintf(stderr, "vgpu bench tenant: cannot read %s\n", o.module.c_str());
      return EXIT_FAILURE;
    }
  }
  CUmodule mod;
  CUfunction f;
  TENANT_CHECK(d.cuModuleLoadData(&mod, image.c_str()));
  TENANT_CHECK(d.cuModuleGetFunction(&f, mod, "sim_sleep_ns"));
  if (o.cycles_per_us > 0 && d.cuModuleGetGlobal != nullptr && d.cuMemcpyHtoD != nullptr) {
    CUdeviceptr global = 0;
    size_t size = 0;
    if (d.cuModuleGetGlobal(&global, &size, mod, "vgpu_cycles_per_us") == 0 &&
        size == sizeof(uint64_t)) {
      uint64_t v = o.cycles_per_us;
      TENANT_CHECK(d.cuMemcpyHtoD(global, &v, sizeof v));
    }
  }
  CUstream stream, ref_stream;
  TENANT_CHECK(d.cuStreamCreate(&stream, 1));
  TENANT_CHECK(d.cuStreamCreate(&ref_stream, 1));
  if (o.calibrate) return Calibrate(d, mod, f, stream);
  const bool ptsz = o.launch == "ptsz";
  CUstream launch_stream = ptsz ? nullptr : stream;
  uint64_t ns = o.kernel_ns;
  void* params[] = {&ns};
  CUgraphExec exec = nullptr;
  if (o.launch == "graph") {
    if (d.cuStreamBeginCapture == nullptr || d.cuGraphLaunch == nullptr) {
      std::fprintf(stderr, "vgpu bench tenant: the driver has no graph support\n");
      return EXIT_FAILURE;
    }
    CUgraph graph;
    TENANT_CHECK(d.cuStreamBeginCapture(stream, 0));
    TENANT_CHECK(d.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr));
    TENANT_CHECK(d.cuStreamEndCapture(stream, &graph));
    TENANT_CHECK(d.cuGraphInstantiateWithFlags(&exec, graph, 0));
  }
  auto launch = [&]() -> CUresult {
    if (o.launch == "ptsz") {
      return d.cuLaunchKernel_ptsz(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr);
    }
    if (o.launch == "ex") {
      LaunchConfig c{{1, 1, 1}, {32, 1, 1}, 0, stream, nullptr, 0};
      return d.cuLaunchKernelEx(&c, f, params, nullptr);
    }
    if (o.launch == "coop") {
      return d.cuLaunchCooperativeKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, params);
    }
    if (o.launch == "graph") return d.cuGraphLaunch(exec, stream);
    return d.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr);
  };
  auto record = [&](CUevent ev) -> CUresult {
    if (ptsz && d.cuEventRecord_ptsz != nullptr) return d.cuEventRecord_ptsz(ev, nullptr);
    return d.cuEventRecord(ev, launch_stream);
  };
  auto synchronize = [&]() -> CUresult {
    if (ptsz && d.cuStreamSynchronize_ptsz != nullptr) return d.cuStreamSynchronize_ptsz(nullptr);
    return d.cuStreamSynchronize(launch_stream);
  };
  // The reference: an event on an idle stream, whose host time is known to a few microseconds.
  CUevent ref;
  TENANT_CHECK(d.cuEventCreate(&ref, 0));
  uint64_t ref_host = 0;
  auto take_ref = [&]() -> CUresult {
    uint64_t before = MonotonicNs();
    CUresult rc = d.cuEventRecord(ref, ref_stream);
    uint64_t after = MonotonicNs();
    if (rc == 0) rc = d.cuEventSynchronize(ref);
    ref_host = (before + after) / 2;
    return rc;
  };
  TENANT_CHECK(take_ref());
  std::vector<CUevent> pool;
  struct Pending {
    uint64_t call;
    CUevent ev;
  };
  std::deque<Pending> pending;
  std::vector<std::array<uint64_t, 3>> out;
  out.reserve(static_cast<size_t>(o.stop_ns / (o.kernel_ns + o.gap_ns + 1)) + 16);
  auto collect = [&](const Pending& p) -> CUresult {
    CUresult rc = d.cuEventSynchronize(p.ev);
    float ms = 0;
    if (rc == 0) rc = d.cuEventElapsedTime(&ms, ref, p.ev);
    if (rc != 0) return rc;
    uint64_t end = ref_host + static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
    uint64_t start = end > ns ? end - ns : 0;
    out.push_back({p.call, start, end});
    pool.push_back(p.ev);
    return 0;
  };

  uint64_t t0 = MonotonicNs();
  if (!o.start_now) {
    std::printf("ready\n");
    std::fflush(stdout);
    if (std::scanf("%" SCNu64, &t0) != 1) {
      std::fprintf(stderr, "vgpu bench tenant: no start time on stdin\n");
      return EXIT_FAILURE;
    }
  }
  uint64_t begin = t0 + o.offset_ns, end_at = t0 + o.stop_ns;
  SleepUntil(begin);
  uint64_t last_ref = MonotonicNs();
  while (MonotonicNs() < end_at) {
    if (pending.empty() && MonotonicNs() - last_ref > 2000000000ULL) {
      TENANT_CHECK(take_ref());  // keeps event times within float precision of the reference
      last_ref = MonotonicNs();
    }
    auto launch_one = [&]() -> CUresult {
      CUevent ev;
      if (pool.empty()) {
        if (CUresult rc = d.cuEventCreate(&ev, 0); rc != 0) return rc;
      } else {
        ev = pool.back();
        pool.pop_back();
      }
      uint64_t call = MonotonicNs();
      if (CUresult rc = launch(); rc != 0) return rc;
      if (CUresult rc = record(ev); rc != 0) return rc;
      pending.push_back({call, ev});
      return 0;
    };
    if (o.sync > 0) {
      for (int k = 0; k < o.sync; ++k) TENANT_CHECK(launch_one());
      TENANT_CHECK(synchronize());
      while (!pending.empty()) {
        TENANT_CHECK(collect(pending.front()));
        pending.pop_front();
      }
      if (o.gap_ns > 0) SleepUntil(MonotonicNs() + o.gap_ns);
      continue;
    }
    TENANT_CHECK(launch_one());
    if (o.gap_ns > 0 || static_cast<int>(pending.size()) >= o.depth) {
      TENANT_CHECK(collect(pending.front()));
      pending.pop_front();
    }
    if (o.gap_ns > 0) SleepUntil(MonotonicNs() + o.gap_ns);
  }
  while (!pending.empty()) {
    TENANT_CHECK(collect(pending.front()));
    pending.pop_front();
  }
  FILE* file = std::fopen(o.out.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "vgpu bench tenant: cannot write %s\n", o.out.c_str());
    return EXIT_FAILURE;
  }
  for (const auto& r : out) {
    std::fprintf(file, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", r[0], r[1], r[2]);
  }
  std::fclose(file);
  if (o.start_now) return EXIT_SUCCESS;
  // Stay registered with the GPU until the parent has read the timeline (it closes stdin).
  std::printf("done\n");
  std::fflush(stdout);
  int c;
  while ((c = std::getchar()) != EOF) {
  }
  return EXIT_SUCCESS;
}

#undef TENANT_CHECK  // the sources of a unity batch follow

}  // namespace vgpu::bench
