// What a CUDA runtime program pays per cudaLaunchKernel and per cudaMalloc + cudaFree pair, on
// whatever driver it finds (built by nvcc; bench_intercept runs it with libvgpu.so preloaded and
// without, on the simulated driver and on the fake of fake_libcuda_runtime.cc).
//
//   intercept_runtime_bench [--reps R] [--iters N]
//
// Prints, in nanoseconds per call (per pair), the fastest of R runs of N calls each:
//   launch NS        cudaLaunchKernel of an empty kernel (sim_sleep_ns with 0 ns: no device time
//                    on the simulated GPU), 1 block of 32 threads, on the legacy default stream
//   pair NS          cudaMalloc of 4096 bytes, then cudaFree
//   fake_calls L A   when the driver is the fake: the launches and allocations that reached it
// Exit status: 0, 1 when a CUDA call fails (named on stderr), 2 on bad usage.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void sim_sleep_ns_bench(unsigned long long ns) { (void)ns; }

namespace {

bool Fail(const char* what, cudaError_t e) {
  std::fprintf(stderr, "intercept_runtime_bench: %s: %s (%s)\n", what, cudaGetErrorName(e),
               cudaGetErrorString(e));
  return false;
}

double NsPerCall(std::chrono::steady_clock::time_point t0, int n) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         n;
}

bool Launches(int reps, int iters, double* fastest) {
  unsigned long long ns = 0;
  void* args[] = {&ns};
  const void* kernel = reinterpret_cast<const void*>(&sim_sleep_ns_bench);
  for (int r = 0; r < reps; ++r) {
    int errors = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      errors |= cudaLaunchKernel(kernel, dim3(1), dim3(32), args, 0, nullptr);
    }
    double t = NsPerCall(t0, iters);
    if (errors != 0) return Fail("cudaLaunchKernel", cudaGetLastError());
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return Fail("cudaDeviceSynchronize", e);
    if (t < *fastest) *fastest = t;
  }
  return true;
}

bool Pairs(int reps, int iters, double* fastest) {
  for (int r = 0; r < reps; ++r) {
    int errors = 0;
    void* p = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      errors |= cudaMalloc(&p, 4096);
      errors |= cudaFree(p);
    }
    double t = NsPerCall(t0, iters);
    if (errors != 0) return Fail("cudaMalloc/cudaFree", cudaGetLastError());
    if (t < *fastest) *fastest = t;
  }
  return true;
}

bool PositiveArg(const char* flag, const char* value, int* out) {
  char* end = nullptr;
  long v = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || v < 1 || v > 100000000) {
    std::fprintf(stderr, "intercept_runtime_bench: %s: \"%s\": must be a count 1-100000000\n",
                 flag, value);
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  int iters = 200000;
  for (int i = 1; i < argc; ++i) {
    bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--reps") == 0 && has_value) {
      if (!PositiveArg("--reps", argv[++i], &reps)) return 2;
    } else if (std::strcmp(argv[i], "--iters") == 0 && has_value) {
      if (!PositiveArg("--iters", argv[++i], &iters)) return 2;
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("usage: intercept_runtime_bench [--reps R] [--iters N]\n");
      return 0;
    } else {
      std::fprintf(stderr,
                   "intercept_runtime_bench: unknown argument '%s'\n"
                   "usage: intercept_runtime_bench [--reps R] [--iters N]\n",
                   argv[i]);
      return 2;
    }
  }
  cudaError_t e = cudaFree(nullptr);  // the runtime starts and makes its context
  if (e != cudaSuccess) return Fail("cudaFree(nullptr)", e) ? 0 : 1;
  double launch = 1e18;
  double pair = 1e18;
  if (!Launches(reps, iters, &launch) || !Pairs(reps, iters, &pair)) return 1;
  std::printf("launch %.2f\npair %.2f\n", launch, pair);
  // The fake driver says how many calls reached it (the runtime may take other paths).
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  using CallsFn = void (*)(uint64_t*, uint64_t*);
  auto calls =
      driver != nullptr ? reinterpret_cast<CallsFn>(dlsym(driver, "vgpu_bench_fake_calls")) : nullptr;
  if (calls != nullptr) {
    uint64_t launches = 0;
    uint64_t allocs = 0;
    calls(&launches, &allocs);
    std::printf("fake_calls %llu %llu\n", static_cast<unsigned long long>(launches),
                static_cast<unsigned long long>(allocs));
  }
  return 0;
}
