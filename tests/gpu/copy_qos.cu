// Copy QoS on a real GPU (tests/gpu/run.sh, with libvgpu.so preloaded and VGPU_COPY_H2D set):
// stream order survives chunked pacing, and the achieved host-to-device rate stays at the cap.
//
//   copy_qos CAP_BYTES_PER_S
//
// Eight asynchronous copies of 64 MiB from pinned buffers, each filled with its own number, go
// to overlapping ranges of one device buffer (copy k at offset k MiB) on one stream; the device
// buffer is then copied back. Every byte must hold the number of the last copy that covers it:
// a chunk enqueued out of order would leave an older number. Then 1 GiB of copies is timed and
// the rate printed; exit 1 when the order is broken or the rate is above the cap by more than 5%.
#include <cuda_runtime.h>

#include <chrono>
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

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: copy_qos CAP_BYTES_PER_S\n");
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
