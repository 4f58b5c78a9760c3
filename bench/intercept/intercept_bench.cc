// What libvgpu.so adds to a driver call, measured against a minimal fake driver
// (fake_libcuda.cc): the same call made directly (vgpu_bench_real_*) and through the hook, in
// one process that has libvgpu.so preloaded (the program re-executes itself with LD_PRELOAD).
// And what it adds to the CUDA runtime's cudaLaunchKernel and cudaMalloc + cudaFree, in a
// program built with nvcc run with libvgpu.so and without it (runtime_rows.h).
//
//   bench_intercept [Google Benchmark flags]   the driver API benchmarks
//   bench_intercept --check [--runtime-only] [--rounds N]
//                                              asserts the budgets (ctest): <= 15 ns added per
//                                              cuLaunchKernel and per cudaLaunchKernel, <= 200 ns
//                                              per cuMemAlloc/cuMemFree and per cudaMalloc/cudaFree
//                                              pair, <= 15 ns per cuMemcpyHtoDAsync_v2 without a
//                                              copy cap, from the fastest of several repetitions;
//                                              --runtime-only: the runtime rows alone; --rounds:
//                                              rounds of the runtime rows (default 5)
//   bench_intercept --runtime-smoke            the runtime rows once, with few calls and no
//                                              budgets: that they run (ctest)
//   bench_intercept --syscall-window N         N launches, N alloc/free pairs and N copies between
//                                              two getppid() markers, for strace to count syscalls
#include <benchmark/benchmark.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime_rows.h"
#include "spawn.h"

extern "C" {
int cuInit(unsigned int);
int cuMemAlloc_v2(unsigned long long*, size_t);
int cuMemFree_v2(unsigned long long);
int cuMemGetInfo_v2(size_t*, size_t*);
int cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                   void*, void**, void**);
int cuMemcpyHtoDAsync_v2(unsigned long long, const void*, size_t, void*);
int vgpu_bench_real_cuMemcpyHtoDAsync_v2(unsigned long long, const void*, size_t, void*);
int vgpu_bench_real_cuMemAlloc_v2(unsigned long long*, size_t);
int vgpu_bench_real_cuMemFree_v2(unsigned long long);
int vgpu_bench_real_cuMemGetInfo_v2(size_t*, size_t*);
int vgpu_bench_real_cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, unsigned, void*, void**, void**);
}

namespace {

void LaunchDirect(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        vgpu_bench_real_cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  }
}
BENCHMARK(LaunchDirect);

void LaunchHooked(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  }
}
BENCHMARK(LaunchHooked);

void CopyDirect(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(vgpu_bench_real_cuMemcpyHtoDAsync_v2(0x1000, nullptr, 4096, nullptr));
  }
}
BENCHMARK(CopyDirect);

void CopyHooked(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(cuMemcpyHtoDAsync_v2(0x1000, nullptr, 4096, nullptr));
  }
}
BENCHMARK(CopyHooked);

void AllocFreeDirect(benchmark::State& state) {
  unsigned long long p = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(vgpu_bench_real_cuMemAlloc_v2(&p, 4096));
    benchmark::DoNotOptimize(vgpu_bench_real_cuMemFree_v2(p));
  }
}
BENCHMARK(AllocFreeDirect);

void AllocFreeHooked(benchmark::State& state) {
  unsigned long long p = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(cuMemAlloc_v2(&p, 4096));
    benchmark::DoNotOptimize(cuMemFree_v2(p));
  }
}
BENCHMARK(AllocFreeHooked);

void MemGetInfoHooked(benchmark::State& state) {
  size_t free = 0, total = 0;
  for (auto _ : state) benchmark::DoNotOptimize(cuMemGetInfo_v2(&free, &total));
}
BENCHMARK(MemGetInfoHooked);

// Nanoseconds per iteration of `body`, the fastest of `reps` runs of `n` iterations.
template <typename Body>
double FastestNs(int reps, int n, Body body) {
  double best = 1e18;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) body();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
  return best;
}

int Check() {
  constexpr int kReps = 15;
  constexpr int kN = 400000;
  unsigned long long p = 0;
  double launch_direct = FastestNs(kReps, kN, [] {
    benchmark::DoNotOptimize(
        vgpu_bench_real_cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  });
  double launch_hooked = FastestNs(kReps, kN, [] {
    benchmark::DoNotOptimize(
        cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  });
  double pair_direct = FastestNs(kReps, kN, [&] {
    benchmark::DoNotOptimize(vgpu_bench_real_cuMemAlloc_v2(&p, 4096));
    benchmark::DoNotOptimize(vgpu_bench_real_cuMemFree_v2(p));
  });
  double pair_hooked = FastestNs(kReps, kN, [&] {
    benchmark::DoNotOptimize(cuMemAlloc_v2(&p, 4096));
    benchmark::DoNotOptimize(cuMemFree_v2(p));
  });
  double copy_direct = FastestNs(kReps, kN, [] {
    benchmark::DoNotOptimize(vgpu_bench_real_cuMemcpyHtoDAsync_v2(0x1000, nullptr, 4096, nullptr));
  });
  double copy_hooked = FastestNs(kReps, kN, [] {
    benchmark::DoNotOptimize(cuMemcpyHtoDAsync_v2(0x1000, nullptr, 4096, nullptr));
  });
  double copy_added = copy_hooked - copy_direct;
  double launch_added = launch_hooked - launch_direct;
  double pair_added = pair_hooked - pair_direct;
  std::printf(
      "cuLaunchKernel: direct %.1f ns, through libvgpu %.1f ns, added %.1f ns (budget 15)\n",
      launch_direct, launch_hooked, launch_added);
  std::printf(
      "cuMemAlloc+cuMemFree: direct %.1f ns, through libvgpu %.1f ns, added %.1f ns "
      "(budget 200)\n",
      pair_direct, pair_hooked, pair_added);
  std::printf(
      "cuMemcpyHtoDAsync_v2, no copy cap: direct %.1f ns, through libvgpu %.1f ns, added %.1f ns "
      "(budget 15, as a launch)\n",
      copy_direct, copy_hooked, copy_added);
  return launch_added <= 15 && pair_added <= 200 && copy_added <= 15 ? 0 : 1;
}

int SyscallWindow(int n) {
  unsigned long long p = 0;
  // Warm up: initialisation, the process's slot, the allocation table.
  for (int i = 0; i < 1000; ++i) {
    cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
    cuMemAlloc_v2(&p, 4096);
    cuMemFree_v2(p);
    cuMemcpyHtoDAsync_v2(0x1000, nullptr, 4096, nullptr);
  }
  syscall(SYS_getppid);  // marker: start
  for (int i = 0; i < n; ++i) {
    cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
    cuMemAlloc_v2(&p, 4096);
    cuMemFree_v2(p);
    cuMemcpyHtoDAsync_v2(0x1000, nullptr, 4096, nullptr);
  }
  syscall(SYS_getppid);  // marker: end
  return 0;
}

// The environment of the process that measures the driver API rows (libvgpu.so preloaded).
std::vector<std::string> ChildEnvironment(const std::string& region_path) {
  return {std::string("LD_PRELOAD=") + VGPU_BENCH_LIBVGPU, "CUDA_DEVICE_MEMORY_LIMIT=64g",
          "CUDA_DEVICE_MEMORY_SHARED_CACHE=" + region_path, "VGPU_CONTEXT_OVERHEAD=0",
          "VGPU_BENCH_CHILD=1"};
}

bool CountArg(const char* flag, const char* value, int* out) {
  char* end = nullptr;
  long v = value == nullptr ? 0 : std::strtol(value, &end, 10);
  if (value == nullptr || end == value || *end != '\0' || v < 1 || v > 1000) {
    std::fprintf(stderr, "bench_intercept: %s: \"%s\": must be a count 1-1000\n", flag,
                 value == nullptr ? "" : value);
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

// --check and --runtime-smoke: the driver API rows in a child with libvgpu.so preloaded, then
// the runtime rows, each in processes of their own.
int Orchestrate(int argc, char** argv) {
  bool check = false;
  bool runtime_only = false;
  bool smoke = false;
  vgpu::bench::RuntimeRowsOptions rt;
  rt.program = VGPU_BENCH_RUNTIME_PROGRAM;
  rt.libvgpu = VGPU_BENCH_LIBVGPU;
  rt.fake_dir = VGPU_BENCH_FAKE_RUNTIME_DIR;
  rt.simgpu_dir = VGPU_BENCH_SIMGPU_DIR;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--check") == 0) {
      check = true;
    } else if (std::strcmp(argv[i], "--runtime-only") == 0) {
      runtime_only = true;
    } else if (std::strcmp(argv[i], "--runtime-smoke") == 0) {
      smoke = true;
    } else if (std::strcmp(argv[i], "--rounds") == 0) {
      if (!CountArg("--rounds", i + 1 < argc ? argv[++i] : nullptr, &rt.rounds)) return 2;
    } else {
      std::fprintf(stderr, "bench_intercept: unknown argument '%s' with --check (see --help)\n",
                   argv[i]);
      return 2;
    }
  }
  if (smoke && (check || runtime_only)) {
    std::fprintf(stderr, "bench_intercept: --runtime-smoke goes alone (see --help)\n");
    return 2;
  }
  if (!check && runtime_only) {
    std::fprintf(stderr, "bench_intercept: --runtime-only needs --check (see --help)\n");
    return 2;
  }
  int rc = 0;
  if (check && !runtime_only) {
    std::string region_path = "/tmp/vgpu-bench-" + std::to_string(getpid()) + ".region";
    rc = vgpu::bench::RunProgram({"/proc/self/exe", "--check"}, {}, {},
                                 ChildEnvironment(region_path), nullptr);
    unlink(region_path.c_str());
  }
  if (smoke) {
    rt.rounds = 1;
    rt.reps = 2;
    rt.iters = 2000;
    rt.budgets = false;
  }
  std::fflush(stdout);
  int rt_rc = vgpu::bench::RunRuntimeRows(rt);
  return rc != 0 ? (rc == 2 ? 2 : 1) : rt_rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("VGPU_BENCH_CHILD") == nullptr) {
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--help") == 0) {
        std::printf(
            "bench_intercept [Google Benchmark flags]\n"
            "bench_intercept --check [--runtime-only] [--rounds N]\n"
            "bench_intercept --runtime-smoke\n"
            "bench_intercept --syscall-window N\n"
            "(the source's header, bench/intercept/intercept_bench.cc, says what each does)\n\n");
        break;
      }
      if (std::strcmp(argv[i], "--check") == 0 || std::strcmp(argv[i], "--runtime-smoke") == 0) {
        return Orchestrate(argc, argv);
      }
    }
    std::string region_path = "/tmp/vgpu-bench-" + std::to_string(getpid()) + ".region";
    for (const std::string& e : ChildEnvironment(region_path)) putenv(strdup(e.c_str()));
    execv("/proc/self/exe", argv);
    std::perror("execv");
    return 1;
  }
  const char* region = std::getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE");
  cuInit(0);
  int rc = 0;
  if (argc >= 2 && std::strcmp(argv[1], "--check") == 0) {
    rc = Check();
  } else if (argc >= 3 && std::strcmp(argv[1], "--syscall-window") == 0) {
    rc = SyscallWindow(std::atoi(argv[2]));
  } else {
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  if (region != nullptr) unlink(region);
  return rc;
}
