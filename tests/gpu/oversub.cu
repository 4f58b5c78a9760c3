// The oversubscription tenant for a real GPU (tests/gpu/oversub.sh): allocates --bytes in
// chunks of 64 MiB with cudaMalloc (which libvgpu.so's spill path may serve from managed memory),
// then for --seconds runs, round after round, a kernel that reads and writes every chunk, and
// prints "rounds=N device_bytes=D managed_bytes=M seconds=S".
//   oversub --bytes N --seconds S
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

__global__ void Touch(float* p, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = p[i] * 0.5f + 1.0f;
  }
}

int main(int argc, char** argv) {
  size_t bytes = 0;
  double seconds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--bytes") == 0) bytes = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
  }
  if (bytes == 0) {
    std::fprintf(stderr, "usage: oversub --bytes N [--seconds S]\n");
    return 2;
  }
  const size_t chunk = 64ull << 20;
  std::vector<float*> chunks;
  size_t managed = 0, device = 0;
  for (size_t done = 0; done < bytes; done += chunk) {
    float* p = nullptr;
    cudaError_t e = cudaMalloc(&p, chunk);
    if (e != cudaSuccess) {
      std::fprintf(stderr, "cudaMalloc after %zu bytes: %s\n", done, cudaGetErrorString(e));
      return 1;
    }
    cudaPointerAttributes a{};
    cudaPointerGetAttributes(&a, p);
    (a.type == cudaMemoryTypeManaged ? managed : device) += chunk;
    chunks.push_back(p);
  }
  auto t0 = std::chrono::steady_clock::now();
  long rounds = 0;
  double took = 0;
  while (took < seconds) {
    for (float* p : chunks) Touch<<<264, 256>>>(p, chunk / sizeof(float));
    if (cudaDeviceSynchronize() != cudaSuccess) {
      std::fprintf(stderr, "kernel failed: %s\n", cudaGetErrorString(cudaGetLastError()));
      return 1;
    }
    ++rounds;
    took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::printf("rounds=%ld device_bytes=%zu managed_bytes=%zu seconds=%.3f\n", rounds, device,
              managed, took);
  return 0;
}
