// Copy QoS on a real GPU (tests/gpu/run.sh, with libvgpu.so preloaded and VGPU_COPY_H2D set):
// stream order survives chunked pacing, and the achieved host-to-device rate stays at the cap.
//
//   copy_qos CAP_BYTES_PER_S
//   copy_qos --windows SECONDS CAP_BYTES_PER_S
//
// Eight asynchronous copies of 64 MiB from pinned buffers, each filled with its own number, go
// to overlapping ranges of one device buffer (copy k at offset k MiB) on one stream; the device
// buffer is then copied back. Every byte must hold the number of the last copy that covers it:
// a chunk enqueued out of order would leave an older number. Then 1 GiB of copies is timed and
// the rate printed; exit 1 when the order is broken or the rate is above the cap by more than 5%.
//
// --windows: one tenant of the two-tenant scenario (tests/gpu/run.sh starts two at once, each in
// its own region with its own cap). It copies 16 MiB from pinned memory to the device, one
// synchronous copy after another, for SECONDS, and counts the bytes of the copies that ended in
// each 1 s window; it prints every window's rate and its deviation from the cap, and exits 1
// when a window is off by more than 5%.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_)); \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int Windows(int seconds, double cap) {
  constexpr size_t kCopy = 16 << 20;
  char* dev = nullptr;
  char* host = nullptr;
  CHECK(cudaMalloc(&dev, kCopy));
  CHECK(cudaMallocHost(&host, kCopy));
  std::memset(host, 1, kCopy);
  CHECK(cudaMemcpy(dev, host, kCopy, cudaMemcpyHostToDevice));  // context and first burst
  std::vector<double> bytes(seconds, 0.0);
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    CHECK(cudaMemcpy(dev, host, kCopy, cudaMemcpyHostToDevice));
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (t >= seconds) break;
    bytes[static_cast<size_t>(t)] += kCopy;
  }
  double worst = 0;
  for (int w = 0; w < seconds; ++w) {
    double dev_pct = 100.0 * (bytes[w] - cap) / cap;
    std::printf("window %d: %.3f GB/s (cap %.3f GB/s, %+.1f%%)\n", w, bytes[w] / 1e9, cap / 1e9,
                dev_pct);
    if (std::abs(dev_pct) > std::abs(worst)) worst = dev_pct;
  }
  std::printf("worst window: %+.1f%% of the cap\n", worst);
  return std::abs(worst) <= 5.0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--windows") == 0) {
    const int seconds = std::atoi(argv[2]);
    const double cap = std::strtod(argv[3], nullptr);
    if (seconds < 1 || seconds > 3600 || !(cap > 0)) {
      std::fprintf(stderr, "copy_qos --windows: SECONDS 1..3600 and a cap > 0\n");
      return 2;
    }
    return Windows(seconds, cap);
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: copy_qos CAP_BYTES_PER_S | copy_qos --windows SECONDS CAP\n");
    return 2;
  }
  const double cap = std::strtod(argv[1], nullptr);
  constexpr size_t kMiB = 1 << 20, kCopy = 64 * kMiB, kCopies = 8;
  const size_t span = kCopy + (kCopies - 1) * kMiB;
  char* dev = nullptr;
  CHECK(cudaMalloc(&dev, span));
  CHECK(cudaMemset(dev, 0xff, span));
  std::vector<char*> host(kCopies);
  for (size_t k = 0; k < kCopies; ++k) {
    CHECK(cudaMallocHost(&host[k], kCopy));
    std::memset(host[k], static_cast<int>(k), kCopy);
  }
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (size_t k = 0; k < kCopies; ++k) {
    CHECK(cudaMemcpyAsync(dev + k * kMiB, host[k], kCopy, cudaMemcpyHostToDevice, s));
  }
  std::vector<char> back(span);
  CHECK(cudaMemcpyAsync(back.data(), dev, span, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  size_t wrong = 0;
  for (size_t i = 0; i < span; ++i) {
    size_t last = std::min(i / kMiB, kCopies - 1);  // the last copy that covers byte i
    if (back[i] != static_cast<char>(last)) ++wrong;
  }
  std::printf("order: %zu of %zu bytes out of order\n", wrong, span);

  const size_t total = 16 * kCopy;  // 1 GiB
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < total / kCopy; ++i) {
    CHECK(cudaMemcpyAsync(dev, host[i % kCopies], kCopy, cudaMemcpyHostToDevice, s));
  }
  CHECK(cudaStreamSynchronize(s));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double rate = static_cast<double>(total) / secs;
  std::printf("rate: %.3f GB/s (cap %.3f GB/s)\n", rate / 1e9, cap / 1e9);
  return wrong == 0 && rate <= cap * 1.05 ? 0 : 1;
}
