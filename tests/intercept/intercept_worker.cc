// A CUDA driver API program for libvgpu's multi-process tests: written against the toolkit's
// cuda.h and linked with -lcuda (the simulated GPU), run with libvgpu.so preloaded.
//
//   intercept_worker fill PATH BYTES [EXTRA]
//                                        allocates BYTES through PATH, then EXTRA bytes (default 1)
//                                        more; prints "first RC" and "extra RC" (CUresult names)
//   intercept_worker info                prints "cuMemGetInfo FREE TOTAL", "totalmem BYTES",
//                                        "nvml TOTAL USED FREE", "procs N", "proc PID USED"...
//   intercept_worker nvml                the NVML lines only, without initialising CUDA
//   intercept_worker usage               prints "used BYTES" (cuMemGetInfo total - free)
//   intercept_worker hold BYTES          allocates, prints "ready PID" and holds until stdin closes
//   intercept_worker park BYTES [ignore-term]
//                                        allocates BYTES (none for 0), prints "ready PID" and
//                                        sleeps until killed (ignoring SIGTERM if asked)
//   intercept_worker asyncfree default|pool|reserve BYTES WHOLE
//                                        cuMemAllocAsync of BYTES (from the default pool, a new
//                                        pool with release threshold 0, or one with an unlimited
//                                        threshold), cuMemFreeAsync, cuStreamSynchronize, then
//                                        cuMemAlloc of WHOLE bytes and of WHOLE - BYTES; prints
//                                        "whole RC" and "rest RC"
//   intercept_worker asyncpark default|pool|reserve BYTES
//                                        the same allocation, free and synchronization, then
//                                        prints "ready PID" and sleeps until killed
//   intercept_worker race CHUNK          prints "ready", waits for a line on stdin, allocates CHUNK
//                                        bytes until refused, prints "granted BYTES", holds until
//                                        stdin closes
//   intercept_worker telemetry LAUNCHES KERNEL_US COPIES COPY_BYTES ALLOCS ALLOC_BYTES
//                                        LAUNCHES kernels of KERNEL_US each, COPIES host-to-device
//                                        and as many device-to-host copies of COPY_BYTES, ALLOCS
//                                        allocations of ALLOC_BYTES (half of those made freed),
//                                        cuCtxSynchronize; prints "launched N", "copied H2D D2H",
//                                        "allocated N", "refused N", "freed N" (what the driver
//                                        and libvgpu answered) and exits
//   intercept_worker telemetry-hold ...  the same, then holds until stdin closes
//   intercept_worker loop HOLD KERNELS KERNEL_US GAP_US COPY_BYTES LEAK_BYTES ITERATIONS
//                                        a tenant that keeps working: allocates HOLD bytes (none
//                                        for 0), and per iteration launches KERNELS kernels of
//                                        KERNEL_US, synchronizes, allocates LEAK_BYTES that it
//                                        never frees (none for 0) and spends GAP_US of host time
//                                        ("~N": a random gap, exponential with mean N us, as
//                                        requests arrive at a server); with COPY_BYTES, a second
//                                        thread (a data loader) copies COPY_BYTES host-to-device
//                                        and back on a stream of its own every 10 ms meanwhile.
//                                        Prints "ready PID NS" (NS: CLOCK_MONOTONIC) once the first
//                                        iteration is done; after ITERATIONS iterations (0: no
//                                        end) "stopped NS", and then only holds its memory. Ends
//                                        when stdin closes, printing "iterations N"
//   intercept_worker churn FILE [PAUSE_US]
//                                        allocates and frees 1-4 MiB in a loop (pausing PAUSE_US
//                                        between iterations), counting iterations in the 8-byte
//                                        file FILE and polling cuMemGetInfo; prints "ready"
//
// PATH is one of: alloc, legacy, managed, pitch, vmm, async, async_ptsz, pool, array, array3d,
// mipmap, graph, procaddr, procaddr_ptsz, dlsym. Built for the simulated GPU by CMake, and for a
// real one by tests/gpu/run.sh.
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/nvml_api.h"

extern "C" {
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos);
}

namespace {

const char* Name(CUresult r) {
  const char* name = "?";
  cuGetErrorName(r, &name);
  return name;
}

bool Check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "intercept_worker: %s failed: %s\n", what, Name(r));
  return false;
}

bool UseDevice0() {
  CUdevice dev;
  CUcontext ctx;
  return Check(cuInit(0), "cuInit") && Check(cuDeviceGet(&dev, 0), "cuDeviceGet") &&
         Check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") &&
         Check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

void WaitForStdinToClose() {
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
}

using AllocFn = CUresult (*)(CUdeviceptr*, size_t);
using AllocAsyncFn = CUresult (*)(CUdeviceptr*, size_t, CUstream);

// Allocates `bytes` through `path`. Arrays use 1-byte texels, so that any byte count works.
CUresult AllocThrough(const std::string& path, uint64_t bytes) {
  CUdeviceptr p = 0;
  if (path == "alloc") return cuMemAlloc(&p, bytes);
  if (path == "legacy") {
    using LegacyFn = CUresult (*)(unsigned int*, unsigned int);
    auto fn = reinterpret_cast<LegacyFn>(dlsym(RTLD_DEFAULT, "cuMemAlloc"));
    unsigned int q = 0;
    return fn(&q, static_cast<unsigned int>(bytes));
  }
  if (path == "managed") return cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL);
  if (path == "pitch") {
    // Rows of 512 bytes: the simulated driver's pitch equals the width.
    size_t pitch = 0;
    return cuMemAllocPitch(&p, &pitch, 512, bytes / 512, 4);
  }
  if (path == "vmm") {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h;
    return cuMemCreate(&h, bytes, &prop, 0);
  }
  if (path == "async") return cuMemAllocAsync(&p, bytes, nullptr);
  if (path == "async_ptsz") {
    auto fn = reinterpret_cast<AllocAsyncFn>(dlsym(RTLD_DEFAULT, "cuMemAllocAsync_ptsz"));
    return fn(&p, bytes, nullptr);
  }
  if (path == "pool") {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    static CUmemoryPool pool = nullptr;
    if (pool == nullptr && cuMemPoolCreate(&pool, &props) != CUDA_SUCCESS)
      return CUDA_ERROR_UNKNOWN;
    return cuMemAllocFromPoolAsync(&p, bytes, pool, nullptr);
  }
  // Arrays of 1-byte texels: 2D rows of 4096 when the size allows (real GPUs limit 1D widths).
  const bool rows = bytes % 4096 == 0 && bytes >= 4096;
  const size_t width = rows ? 4096 : bytes;
  const size_t height = rows ? bytes / 4096 : 0;
  if (path == "array") {
    CUDA_ARRAY_DESCRIPTOR d{};
    d.Width = width;
    d.Height = height;
    d.Format = CU_AD_FORMAT_UNSIGNED_INT8;
    d.NumChannels = 1;
    CUarray a;
    return cuArrayCreate(&a, &d);
  }
  if (path == "array3d") {
    CUDA_ARRAY3D_DESCRIPTOR d{};
    d.Width = width;
    d.Height = height;
    d.Format = CU_AD_FORMAT_UNSIGNED_INT8;
    d.NumChannels = 1;
    CUarray a;
    return cuArray3DCreate(&a, &d);
  }
  if (path == "mipmap") {
    CUDA_ARRAY3D_DESCRIPTOR d{};
    d.Width = width;
    d.Height = height;
    d.Format = CU_AD_FORMAT_UNSIGNED_INT8;
    d.NumChannels = 1;
    CUmipmappedArray m;
    return cuMipmappedArrayCreate(&m, &d, 1);
  }
  if (path == "graph") {
    CUgraph g;
    if (cuGraphCreate(&g, 0) != CUDA_SUCCESS) return CUDA_ERROR_UNKNOWN;
    CUDA_MEM_ALLOC_NODE_PARAMS params{};
    params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params.poolProps.location.id = 0;
    params.bytesize = bytes;
    CUgraphNode node;
    CUresult r = cuGraphAddMemAllocNode(&node, g, nullptr, 0, &params);
    if (r != CUDA_SUCCESS) return r;
    CUgraphExec exec;
    return cuGraphInstantiate(&exec, g, 0);
  }
  if (path == "procaddr" || path == "procaddr_ptsz") {
    // As the CUDA runtime does: the driver by name, then every entry point through it.
    void* lib = dlopen("libcuda.so.1", RTLD_NOW);
    using GetProc =
        CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto get = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status;
    if (path == "procaddr") {
      if (get("cuMemAlloc", &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=
          CUDA_SUCCESS) {
        return CUDA_ERROR_NOT_FOUND;
      }
      return reinterpret_cast<AllocFn>(fn)(&p, bytes);
    }
    if (get("cuMemAllocAsync", &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
            &status) != CUDA_SUCCESS) {
      return CUDA_ERROR_NOT_FOUND;
    }
    return reinterpret_cast<AllocAsyncFn>(fn)(&p, bytes, nullptr);
  }
  if (path == "dlsym") {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW);
    auto fn = reinterpret_cast<AllocFn>(dlsym(lib, "cuMemAlloc_v2"));
    return fn(&p, bytes);
  }
  std::fprintf(stderr, "intercept_worker: unknown path %s\n", path.c_str());
  return CUDA_ERROR_INVALID_VALUE;
}

int Fill(const std::string& path, uint64_t bytes, uint64_t extra_bytes) {
  if (!UseDevice0()) return 1;
  CUresult first = AllocThrough(path, bytes);
  std::printf("first %s\n", Name(first));
  CUresult extra = AllocThrough(path, extra_bytes);
  std::printf("extra %s\n", Name(extra));
  return 0;
}

void PrintNvml() {
  if (nvmlInit_v2() != NVML_SUCCESS) {
    std::printf("nvml unavailable\n");
    return;
  }
  nvmlDevice_t dev;
  nvmlDeviceGetHandleByIndex_v2(0, &dev);
  nvmlMemory_t m{};
  nvmlDeviceGetMemoryInfo(dev, &m);
  std::printf("nvml %llu %llu %llu\n", m.total, m.used, m.free);
  nvmlProcessInfo_t infos[64];
  unsigned int count = 64;
  nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, infos);
  std::printf("procs %u\n", count);
  for (unsigned int i = 0; i < count; ++i) {
    std::printf("proc %u %llu\n", infos[i].pid, infos[i].usedGpuMemory);
  }
}

int Info() {
  if (!UseDevice0()) return 1;
  size_t free = 0, total = 0;
  if (!Check(cuMemGetInfo(&free, &total), "cuMemGetInfo")) return 1;
  std::printf("cuMemGetInfo %zu %zu\n", free, total);
  size_t bytes = 0;
  if (!Check(cuDeviceTotalMem(&bytes, 0), "cuDeviceTotalMem")) return 1;
  std::printf("totalmem %zu\n", bytes);
  PrintNvml();
  return 0;
}

int Usage() {
  if (!UseDevice0()) return 1;
  size_t free = 0, total = 0;
  if (!Check(cuMemGetInfo(&free, &total), "cuMemGetInfo")) return 1;
  std::printf("used %zu\n", total - free);
  return 0;
}

int Hold(uint64_t bytes) {
  if (!UseDevice0()) return 1;
  CUdeviceptr p;
  if (!Check(cuMemAlloc(&p, bytes), "cuMemAlloc")) return 1;
  std::printf("ready %d\n", getpid());
  std::fflush(stdout);
  WaitForStdinToClose();
  return 0;
}

int Park(uint64_t bytes, bool ignore_term) {
  if (ignore_term) signal(SIGTERM, SIG_IGN);
  if (!UseDevice0()) return 1;
  CUdeviceptr p;
  if (bytes != 0 && !Check(cuMemAlloc(&p, bytes), "cuMemAlloc")) return 1;
  std::printf("ready %d\n", getpid());
  std::fflush(stdout);
  for (;;) pause();
}

// cuMemAllocAsync of `bytes` from the pool `kind` names, cuMemFreeAsync, cuStreamSynchronize.
bool AsyncAllocFreeSync(const std::string& kind, uint64_t bytes) {
  CUmemoryPool pool = nullptr;
  if (kind != "default") {
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    if (!Check(cuMemPoolCreate(&pool, &props), "cuMemPoolCreate")) return 1;
    cuuint64_t threshold = kind == "reserve" ? ~0ULL : 0;
    if (!Check(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
               "cuMemPoolSetAttribute")) {
      return false;
    }
  }
  CUdeviceptr p = 0;
  CUresult r = pool == nullptr ? cuMemAllocAsync(&p, bytes, nullptr)
                               : cuMemAllocFromPoolAsync(&p, bytes, pool, nullptr);
  return Check(r, "async allocation") && Check(cuMemFreeAsync(p, nullptr), "cuMemFreeAsync") &&
         Check(cuStreamSynchronize(nullptr), "cuStreamSynchronize");
}

int AsyncFree(const std::string& kind, uint64_t bytes, uint64_t whole) {
  if (!UseDevice0() || !AsyncAllocFreeSync(kind, bytes)) return 1;
  CUdeviceptr q = 0;
  CUresult r = cuMemAlloc(&q, whole);
  std::printf("whole %s\n", Name(r));
  if (r == CUDA_SUCCESS) cuMemFree(q);
  std::printf("rest %s\n", Name(cuMemAlloc(&q, whole - bytes)));
  return 0;
}

int AsyncPark(const std::string& kind, uint64_t bytes) {
  if (!UseDevice0() || !AsyncAllocFreeSync(kind, bytes)) return 1;
  std::printf("ready %d\n", getpid());
  std::fflush(stdout);
  for (;;) pause();
}

int Race(uint64_t chunk) {
  if (!UseDevice0()) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  char line[16];
  if (read(0, line, sizeof line) <= 0) return 1;
  uint64_t granted = 0;
  CUdeviceptr p;
  while (cuMemAlloc(&p, chunk) == CUDA_SUCCESS) granted += chunk;
  std::printf("granted %llu\n", static_cast<unsigned long long>(granted));
  std::fflush(stdout);
  WaitForStdinToClose();
  return 0;
}

int Telemetry(uint64_t launches, uint64_t kernel_us, uint64_t copies, uint64_t copy_bytes,
              uint64_t allocs, uint64_t alloc_bytes, bool hold) {
  if (!UseDevice0()) return 1;
  CUmodule mod;
  CUfunction f;
  // On the simulated GPU any image works and sim_sleep_ns runs for its argument (docs/simgpu.md).
  if (!Check(cuModuleLoadData(&mod, "telemetry"), "cuModuleLoadData") ||
      !Check(cuModuleGetFunction(&f, mod, "sim_sleep_ns"), "cuModuleGetFunction")) {
    return 1;
  }
  uint64_t ns = kernel_us * 1000;
  void* params[] = {&ns};
  uint64_t launched = 0;
  for (uint64_t i = 0; i < launches; ++i) {
    if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) == CUDA_SUCCESS) {
      ++launched;
    }
  }
  std::vector<char> host(copy_bytes + 1);
  CUdeviceptr buffer = 0;
  uint64_t h2d = 0, d2h = 0;
  if (copies > 0 && Check(cuMemAlloc(&buffer, copy_bytes), "cuMemAlloc")) {
    for (uint64_t i = 0; i < copies; ++i) {
      if (cuMemcpyHtoD(buffer, host.data(), copy_bytes) == CUDA_SUCCESS) h2d += copy_bytes;
      if (cuMemcpyDtoH(host.data(), buffer, copy_bytes) == CUDA_SUCCESS) d2h += copy_bytes;
    }
  }
  std::vector<CUdeviceptr> held;
  uint64_t refused = 0;
  for (uint64_t i = 0; i < allocs; ++i) {
    CUdeviceptr p;
    CUresult r = cuMemAlloc(&p, alloc_bytes);
    if (r == CUDA_SUCCESS) {
      held.push_back(p);
    } else if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      ++refused;
    }
  }
  uint64_t freed = 0;
  for (size_t i = 0; i < held.size(); i += 2) {
    if (cuMemFree(held[i]) == CUDA_SUCCESS) ++freed;
  }
  if (!Check(cuCtxSynchronize(), "cuCtxSynchronize")) return 1;
  std::printf("launched %llu\ncopied %llu %llu\nallocated %llu\nrefused %llu\nfreed %llu\n",
              static_cast<unsigned long long>(launched), static_cast<unsigned long long>(h2d),
              static_cast<unsigned long long>(d2h),
              static_cast<unsigned long long>(held.size() + (buffer != 0 ? 1 : 0)),
              static_cast<unsigned long long>(refused), static_cast<unsigned long long>(freed));
  std::fflush(stdout);
  if (hold) WaitForStdinToClose();
  return 0;
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// True once stdin is closed (without waiting).
bool StdinClosed() {
  pollfd p{0, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  char buf[64];
  return read(0, buf, sizeof buf) <= 0;
}

struct LoopSpec {
  uint64_t hold = 0, kernels = 0, kernel_us = 0, gap_us = 0, copy_bytes = 0, leak_bytes = 0;
  uint64_t iterations = 0;
  bool random_gap = false;
};

int Loop(const LoopSpec& s) {
  if (!UseDevice0()) return 1;
  CUdeviceptr held = 0;
  if (s.hold != 0 && !Check(cuMemAlloc(&held, s.hold), "cuMemAlloc")) return 1;
  CUmodule mod;
  CUfunction f;
  if (!Check(cuModuleLoadData(&mod, "loop"), "cuModuleLoadData") ||
      !Check(cuModuleGetFunction(&f, mod, "sim_sleep_ns"), "cuModuleGetFunction")) {
    return 1;
  }
  std::vector<char> host(s.copy_bytes + 1);
  CUdeviceptr buffer = 0;
  if (s.copy_bytes != 0 && !Check(cuMemAlloc(&buffer, s.copy_bytes), "cuMemAlloc")) return 1;
  CUcontext ctx = nullptr;
  cuCtxGetCurrent(&ctx);
  std::atomic<bool> stop{false};
  std::thread loader;
  if (buffer != 0) {
    loader = std::thread([&] {
      CUstream stream;
      if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
          !Check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate")) {
        return;
      }
      while (!stop.load()) {
        if (!Check(cuMemcpyHtoDAsync(buffer, host.data(), s.copy_bytes, stream), "copy") ||
            !Check(cuMemcpyDtoHAsync(host.data(), buffer, s.copy_bytes, stream), "copy") ||
            !Check(cuStreamSynchronize(stream), "cuStreamSynchronize")) {
          return;
        }
        usleep(10'000);
      }
    });
  }
  struct Join {
    std::atomic<bool>& stop;
    std::thread& t;
    ~Join() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } join{stop, loader};
  uint64_t ns = s.kernel_us * 1000;
  void* params[] = {&ns};
  std::mt19937_64 random(42);
  std::exponential_distribution<double> gap(1.0 /
                                            static_cast<double>(std::max<uint64_t>(1, s.gap_us)));
  uint64_t i = 0;
  for (; s.iterations == 0 || i < s.iterations; ++i) {
    if (i == 1) {  // the first iteration (and the set-up it paid for) is behind
      std::printf("ready %d %llu\n", getpid(), static_cast<unsigned long long>(MonotonicNs()));
      std::fflush(stdout);
    }
    if (StdinClosed()) {
      std::printf("iterations %llu\n", static_cast<unsigned long long>(i));
      return 0;
    }
    for (uint64_t k = 0; k < s.kernels; ++k) {
      if (!Check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
                 "cuLaunchKernel")) {
        return 1;
      }
    }
    if (!Check(cuCtxSynchronize(), "cuCtxSynchronize")) return 1;
    CUdeviceptr leaked;
    if (s.leak_bytes != 0 && !Check(cuMemAlloc(&leaked, s.leak_bytes), "cuMemAlloc")) return 1;
    const uint64_t us = s.random_gap ? static_cast<uint64_t>(gap(random)) : s.gap_us;
    if (us != 0) usleep(static_cast<useconds_t>(us));
  }
  stop = true;
  if (loader.joinable()) loader.join();
  if (i <= 1)
    std::printf("ready %d %llu\n", getpid(), static_cast<unsigned long long>(MonotonicNs()));
  std::printf("stopped %llu\n", static_cast<unsigned long long>(MonotonicNs()));
  std::fflush(stdout);
  WaitForStdinToClose();
  std::printf("iterations %llu\n", static_cast<unsigned long long>(i));
  return 0;
}

int Churn(const char* counter_file, unsigned pause_us) {
  int fd = open(counter_file, O_RDWR | O_CREAT, 0644);
  if (fd < 0 || ftruncate(fd, 8) != 0) return 1;
  auto* counter = static_cast<std::atomic<uint64_t>*>(
      mmap(nullptr, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (!UseDevice0()) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  std::vector<CUdeviceptr> held;
  for (uint64_t i = 0;; ++i) {
    CUdeviceptr p;
    uint64_t size = (1 + i % 4) << 20;
    if (cuMemAlloc(&p, size) == CUDA_SUCCESS) held.push_back(p);
    if (held.size() > 3 || (i % 3 == 0 && !held.empty())) {
      cuMemFree(held.front());
      held.erase(held.begin());
    }
    if (i % 8 == 0) {
      // Poll the slice as frameworks do; this is also when dead processes are noticed.
      size_t free = 0, total = 0;
      cuMemGetInfo(&free, &total);
    }
    counter->fetch_add(1);
    if (pause_us != 0) usleep(pause_us);
  }
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "fill" && (argc == 4 || argc == 5)) {
    return Fill(argv[2], std::strtoull(argv[3], nullptr, 10),
                argc == 5 ? std::strtoull(argv[4], nullptr, 10) : 1);
  }
  if (cmd == "info") return Info();
  if (cmd == "nvml") {
    PrintNvml();
    return 0;
  }
  if (cmd == "usage") return Usage();
  if (cmd == "hold" && argc == 3) return Hold(std::strtoull(argv[2], nullptr, 10));
  if (cmd == "race" && argc == 3) return Race(std::strtoull(argv[2], nullptr, 10));
  if (cmd == "park" && (argc == 3 || argc == 4)) {
    return Park(std::strtoull(argv[2], nullptr, 10),
                argc == 4 && std::strcmp(argv[3], "ignore-term") == 0);
  }
  if (cmd == "asyncpark" && argc == 4)
    return AsyncPark(argv[2], std::strtoull(argv[3], nullptr, 10));
  if (cmd == "asyncfree" && argc == 5) {
    return AsyncFree(argv[2], std::strtoull(argv[3], nullptr, 10),
                     std::strtoull(argv[4], nullptr, 10));
  }
  if ((cmd == "telemetry" || cmd == "telemetry-hold") && argc == 8) {
    auto n = [&](int i) { return std::strtoull(argv[i], nullptr, 10); };
    return Telemetry(n(2), n(3), n(4), n(5), n(6), n(7), cmd == "telemetry-hold");
  }
  if (cmd == "loop" && argc == 9) {
    auto n = [&](int i) { return std::strtoull(argv[i], nullptr, 10); };
    LoopSpec spec;
    spec.hold = n(2);
    spec.kernels = n(3);
    spec.kernel_us = n(4);
    spec.random_gap = argv[5][0] == '~';
    spec.gap_us = std::strtoull(argv[5] + (spec.random_gap ? 1 : 0), nullptr, 10);
    spec.copy_bytes = n(6);
    spec.leak_bytes = n(7);
    spec.iterations = n(8);
    return Loop(spec);
  }
  if (cmd == "churn" && (argc == 3 || argc == 4)) {
    return Churn(argv[2],
                 argc == 4 ? static_cast<unsigned>(std::strtoul(argv[3], nullptr, 10)) : 0);
  }
  std::fprintf(
      stderr,
      "usage: intercept_worker "
      "fill|info|nvml|usage|hold|park|asyncfree|asyncpark|race|telemetry|loop|churn ...\n");
  return 2;
}
