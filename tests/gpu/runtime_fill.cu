// A CUDA runtime program (cudaMalloc and friends) for tests/gpu/run.sh: the runtime reaches the
// driver through cuGetProcAddress, so this proves that path on a real driver.
//
//   runtime_fill PATH   fills what cudaMemGetInfo says is free through PATH, then asks for
//                       EXTRA (1 byte, 2 MiB for arrays) more; prints "free BYTES total BYTES",
//                       "first ERROR", "extra ERROR" and "kernels ok" after 1000 launches
//                       ("kernels launched" where they ran but did not compute: simulated).
// PATH: malloc, async, managed, pitch, pool.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

__global__ void Touch(int* p) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *p += 1;
}

static cudaError_t Alloc(const char* path, size_t bytes) {
  void* p = nullptr;
  if (std::strcmp(path, "malloc") == 0) return cudaMalloc(&p, bytes);
  if (std::strcmp(path, "async") == 0) {
    cudaError_t e = cudaMallocAsync(&p, bytes, 0);
    cudaStreamSynchronize(0);
    return e;
  }
  if (std::strcmp(path, "managed") == 0) return cudaMallocManaged(&p, bytes);
  if (std::strcmp(path, "pitch") == 0) {
    size_t pitch = 0;
    return cudaMallocPitch(&p, &pitch, 512, bytes / 512 == 0 ? 1 : bytes / 512);
  }
  if (std::strcmp(path, "pool") == 0) {
    static cudaMemPool_t pool = nullptr;
    if (pool == nullptr) {
      cudaMemPoolProps props = {};
      props.allocType = cudaMemAllocationTypePinned;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = 0;
      cudaMemPoolCreate(&pool, &props);
    }
    cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool, 0);
    cudaStreamSynchronize(0);
    return e;
  }
  return cudaErrorInvalidValue;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: runtime_fill malloc|async|managed|pitch|pool\n");
    return 2;
  }
  const char* path = argv[1];
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "runtime_fill: no CUDA device\n");
    return 1;
  }
  size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  std::printf("free %zu total %zu\n", free, total);
  // Pitched rows and pool chunks come in units: fill the largest multiple of the unit.
  size_t unit = std::strcmp(path, "pitch") == 0 ? 512 : (std::strcmp(path, "pool") == 0 ||
                                                                 std::strcmp(path, "async") == 0
                                                             ? (2u << 20)
                                                             : 1);
  size_t bytes = free / unit * unit;
  std::printf("first %s\n", cudaGetErrorName(Alloc(path, bytes)));
  std::printf("extra %s\n", cudaGetErrorName(Alloc(path, unit)));
  cudaGetLastError();
  int* counter = nullptr;
  if (cudaMallocHost(&counter, sizeof(int)) == cudaSuccess) {
    for (int i = 0; i < 1000; ++i) Touch<<<1, 32>>>(counter);
    // "launched": every launch and the synchronization succeeded but the kernels did not count
    // (the simulated GPU runs kernels for their time and computes nothing).
    const bool synced = cudaDeviceSynchronize() == cudaSuccess;
    std::printf("kernels %s\n", !synced ? "failed" : *counter == 1000 ? "ok" : "launched");
  }
  return 0;
}
