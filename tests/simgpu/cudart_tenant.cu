// A CUDA runtime tenant (built by nvcc with the static runtime) for the runtime twins of the
// slice tests (tests/simgpu/cudart_twins.sh): what the driver-API workers of tests/intercept,
// tests/compute and tests/copyqos do, through NVIDIA's runtime.
//
//   cudart_tenant kernels SECONDS [START_AT_NS]
//                                      1 ms kernels (the simulated GPU's sim_sleep_ns), two in
//                                      flight, for SECONDS (from START_AT_NS, CLOCK_REALTIME,
//                                      when given, so that tenants start together); prints
//                                      "share P" (percent of the wall time the kernels ran, from
//                                      their count)
//   cudart_tenant copies SECONDS BYTES cudaMemcpyAsync host-to-device copies of BYTES from pinned
//                                      memory, each synchronized, for SECONDS; prints
//                                      "h2d BYTES_PER_S"
//   cudart_tenant race CHUNK           prints "ready", waits for a line on stdin, then
//                                      cudaMalloc's CHUNK bytes until refused; prints
//                                      "granted BYTES" and waits for stdin to close
//   cudart_tenant hold BYTES           cudaMalloc's BYTES, prints "ready PID", sleeps
//   cudart_tenant fill                 cudaMalloc's 1 MiB blocks until refused; prints "filled
//                                      BYTES free BYTES" (cudaMemGetInfo's before filling)
//   cudart_tenant touch SECONDS BYTES  cudaMalloc's BYTES in 64 MiB blocks, then touches them in
//                                      turn for SECONDS, a sim_touch kernel of 200 us per block,
//                                      each synchronized; prints "granted BYTES" and
//                                      "touch_rate BLOCKS_PER_S"
// Exit status: 0, 1 when a CUDA call fails unexpectedly (named on stderr), 2 on bad usage.
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// Runs for `ns` nanoseconds on the simulated GPU (its name carries the marker).
__global__ void sim_sleep_ns_tenant(unsigned long long ns) { (void)ns; }

// Touches [p, p + bytes) and then runs for `ns` nanoseconds on the simulated GPU: managed pages
// in the range fault in first (docs/simgpu.md).
__global__ void sim_touch_tenant(unsigned long long ns, void* p, unsigned long long bytes) {
  (void)ns;
  (void)p;
  (void)bytes;
}

constexpr unsigned long long kKernelNs = 1000000ULL;

// Reports a failed call; the exit status.
int Fail(const char* what, cudaError_t e) {
  std::fprintf(stderr, "cudart_tenant: %s: %s (%s)\n", what, cudaGetErrorName(e),
               cudaGetErrorString(e));
  return 1;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Kernels(double seconds, long long start_at_ns) {
  cudaEvent_t done[2];
  for (cudaEvent_t& e : done) {
    cudaError_t r = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (r != cudaSuccess) return Fail("cudaEventCreate", r);
  }
  // Warm up (the first launch loads the module), then measure.
  sim_sleep_ns_tenant<<<1, 32>>>(kKernelNs);
  cudaError_t r = cudaDeviceSynchronize();
  if (r != cudaSuccess) return Fail("first kernel", r);
  if (start_at_ns > 0) {
    std::this_thread::sleep_until(std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(start_at_ns))));
  }
  long kernels = 0;
  const double start = Now();
  while (Now() - start < seconds) {
    const int slot = static_cast<int>(kernels % 2);
    if (kernels >= 2 && (r = cudaEventSynchronize(done[slot])) != cudaSuccess) {
      return Fail("cudaEventSynchronize", r);
    }
    sim_sleep_ns_tenant<<<1, 32>>>(kKernelNs);
    if ((r = cudaGetLastError()) != cudaSuccess) return Fail("launch", r);
    if ((r = cudaEventRecord(done[slot], nullptr)) != cudaSuccess) {
      return Fail("cudaEventRecord", r);
    }
    ++kernels;
  }
  if ((r = cudaDeviceSynchronize()) != cudaSuccess) return Fail("synchronize", r);
  const double wall = Now() - start;
  std::printf("kernels %ld\nshare %.2f\n", kernels, 100.0 * kernels * 1e-3 / wall);
  return 0;
}

int Copies(double seconds, size_t bytes) {
  void* host = nullptr;
  void* dev = nullptr;
  cudaStream_t s = nullptr;
  cudaError_t r;
  if ((r = cudaMallocHost(&host, bytes)) != cudaSuccess) return Fail("cudaMallocHost", r);
  if ((r = cudaMalloc(&dev, bytes)) != cudaSuccess) return Fail("cudaMalloc", r);
  if ((r = cudaStreamCreate(&s)) != cudaSuccess) return Fail("cudaStreamCreate", r);
  std::memset(host, 7, bytes);
  size_t copied = 0;
  const double start = Now();
  while (Now() - start < seconds) {
    if ((r = cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s)) != cudaSuccess ||
        (r = cudaStreamSynchronize(s)) != cudaSuccess) {
      return Fail("cudaMemcpyAsync", r);
    }
    copied += bytes;
  }
  std::printf("h2d %.0f\n", static_cast<double>(copied) / (Now() - start));
  return 0;
}

int Race(size_t chunk) {
  void* p = nullptr;
  // Start the runtime (its context, its modules) before the race, so that all racers start
  // allocating at once.
  cudaError_t r = cudaFree(nullptr);
  if (r != cudaSuccess) return Fail("cudaFree(0)", r);
  std::printf("ready\n");
  std::fflush(stdout);
  char line[16];
  if (read(0, line, sizeof line) <= 0) return 1;
  size_t granted = 0;
  while (cudaMalloc(&p, chunk) == cudaSuccess) granted += chunk;
  cudaGetLastError();
  std::printf("granted %zu\n", granted);
  std::fflush(stdout);
  while (read(0, line, sizeof line) > 0) {
  }
  return 0;
}

int Hold(size_t bytes) {
  void* p = nullptr;
  cudaError_t r = cudaMalloc(&p, bytes);
  if (r != cudaSuccess) return Fail("cudaMalloc", r);
  std::printf("ready %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  for (;;) pause();
}

int Fill() {
  size_t free_bytes = 0;
  size_t total = 0;
  cudaError_t r = cudaMemGetInfo(&free_bytes, &total);
  if (r != cudaSuccess) return Fail("cudaMemGetInfo", r);
  size_t filled = 0;
  void* p = nullptr;
  while (cudaMalloc(&p, 1 << 20) == cudaSuccess) filled += 1 << 20;
  cudaGetLastError();
  std::printf("filled %zu free %zu\n", filled, free_bytes);
  return 0;
}

int Touch(double seconds, size_t bytes) {
  constexpr size_t kBlock = 64ull << 20;
  std::vector<void*> blocks;
  for (size_t got = 0; got < bytes; got += kBlock) {
    void* p = nullptr;
    cudaError_t r = cudaMalloc(&p, kBlock);
    if (r != cudaSuccess) return Fail("cudaMalloc", r);
    blocks.push_back(p);
  }
  std::printf("granted %zu\n", blocks.size() * kBlock);
  long touched = 0;
  const double start = Now();
  while (Now() - start < seconds) {
    sim_touch_tenant<<<1, 32>>>(200000ULL, blocks[touched % blocks.size()], kBlock);
    cudaError_t r = cudaDeviceSynchronize();
    if (r != cudaSuccess) return Fail("touch kernel", r);
    ++touched;
  }
  std::printf("touch_rate %.1f\n", static_cast<double>(touched) / (Now() - start));
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: cudart_tenant kernels SECONDS [START_AT_NS] | copies SECONDS BYTES | "
               "race CHUNK | hold BYTES | fill | touch SECONDS BYTES\n");

  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const std::string cmd = argv[1];
  if (cmd == "kernels" && (argc == 3 || argc == 4)) {
    return Kernels(std::atof(argv[2]), argc == 4 ? std::atoll(argv[3]) : 0);
  }
  if (cmd == "copies" && argc == 4) return Copies(std::atof(argv[2]), std::strtoull(argv[3], nullptr, 10));
  if (cmd == "race" && argc == 3) return Race(std::strtoull(argv[2], nullptr, 10));
  if (cmd == "hold" && argc == 3) return Hold(std::strtoull(argv[2], nullptr, 10));
  if (cmd == "fill" && argc == 2) return Fill();
  if (cmd == "touch" && argc == 4) {
    return Touch(std::atof(argv[2]), std::strtoull(argv[3], nullptr, 10));
  }
  return Usage();
}
