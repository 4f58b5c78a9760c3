// A cuBLAS program (built by nvcc with the toolkit's cuBLAS and the static runtime) that checks
// what a cuBLAS user relies on, on whatever driver it runs on. On the simulated GPU
// (tests/simgpu/cudart_check.sh) it runs without libvgpu and under libvgpu with a memory limit.
//
//   cublas_program --total BYTES [--slice] [--devices N]
//
// --total: the memory cudaMemGetInfo must report for device 0 (the device's, or the slice's under
// libvgpu). Checked: a handle is created and its workspace is charged like any allocation; GEMMs
// in single, double and mixed precision, strided-batched, on the default stream and on a stream
// of the program's own, and a dot product with a host result, all succeed and take time on the
// device; memory handed to cuBLAS keeps its bytes; destroying the handle returns every byte it
// took. --slice: also, with the slice filled so that less than a handle's workspace is left,
// creating a handle fails and keeps no workspace, and succeeds again once the memory is released.
// --devices: only parsed (cudart_check.sh passes it to every program).
//
// Kernels do not compute on the simulated GPU: no check looks at a GEMM's result.
// Prints "ok: ..." or "FAIL: ..." per check; exits 0 when all pass, 1 otherwise, 2 on bad usage.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime_checks.h"

namespace {

bool Blas(cublasStatus_t s, const char* what) {
  std::printf("%s: %s (%s)\n", s == CUBLAS_STATUS_SUCCESS ? "ok" : "FAIL", what,
              cublasGetStatusName(s));
  if (s != CUBLAS_STATUS_SUCCESS) ++g_failures;
  return s == CUBLAS_STATUS_SUCCESS;
}

size_t FreeBytes() {
  size_t free_bytes = 0, total_bytes = 0;
  Ok(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return free_bytes;
}

constexpr int kN = 256;

struct Matrices {
  float *a = nullptr, *b = nullptr, *c = nullptr;
  double *da = nullptr, *db = nullptr, *dc = nullptr;
  __half *ha = nullptr, *hb = nullptr;
};

bool Allocate(Matrices* m) {
  const size_t n2 = size_t{kN} * kN;
  return Ok(cudaMalloc(&m->a, n2 * sizeof(float)), "cudaMalloc A") &&
         Ok(cudaMalloc(&m->b, n2 * sizeof(float)), "cudaMalloc B") &&
         Ok(cudaMalloc(&m->c, n2 * sizeof(float)), "cudaMalloc C") &&
         Ok(cudaMalloc(&m->da, n2 * sizeof(double)), "cudaMalloc double A") &&
         Ok(cudaMalloc(&m->db, n2 * sizeof(double)), "cudaMalloc double B") &&
         Ok(cudaMalloc(&m->dc, n2 * sizeof(double)), "cudaMalloc double C") &&
         Ok(cudaMalloc(&m->ha, n2 * sizeof(__half)), "cudaMalloc half A") &&
         Ok(cudaMalloc(&m->hb, n2 * sizeof(__half)), "cudaMalloc half B");
}

void Release(Matrices* m) {
  for (void* p : {static_cast<void*>(m->a), static_cast<void*>(m->b), static_cast<void*>(m->c),
                  static_cast<void*>(m->da), static_cast<void*>(m->db), static_cast<void*>(m->dc),
                  static_cast<void*>(m->ha), static_cast<void*>(m->hb)}) {
    if (p != nullptr) cudaFree(p);
  }
}

// Each GEMM cuBLAS offers a model's layers, then the time the default stream's work took.
void Gemms(cublasHandle_t h, const Matrices& m) {
  const float one = 1.0f, zero = 0.0f;
  const double done = 1.0, dzero = 0.0;
  cudaEvent_t start, stop;
  Ok(cudaEventCreate(&start), "cudaEventCreate");
  Ok(cudaEventCreate(&stop), "cudaEventCreate");
  Ok(cudaEventRecord(start, nullptr), "cudaEventRecord");
  Blas(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, m.a, kN, m.b, kN, &zero, m.c, kN),
       "cublasSgemm 256x256x256");
  Ok(cudaEventRecord(stop, nullptr), "cudaEventRecord");
  Ok(cudaEventSynchronize(stop), "cudaEventSynchronize after the GEMM");
  float ms = 0;
  Ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  Check(ms > 0, "the GEMM's kernels took time on the device");
  Blas(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, m.a, 64, m.b, 64, &zero, m.c, 64),
       "cublasSgemm 64x64x64");
  Blas(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, kN, kN, kN, &done, m.da, kN, m.db, kN, &dzero, m.dc,
                   kN),
       "cublasDgemm with B transposed");
  Blas(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &one, m.a, 16, 256, m.b,
                                 16, 256, &zero, m.c, 16, 256, 8),
       "cublasSgemmStridedBatched, 8 of 16x16x16");
  Blas(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, m.ha, CUDA_R_16F, kN, m.hb,
                    CUDA_R_16F, kN, &zero, m.c, CUDA_R_32F, kN, CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT),
       "cublasGemmEx, half inputs, float output");
  float dot = -1;
  Blas(cublasSdot(h, kN, m.a, 1, m.b, 1, &dot), "cublasSdot with a host result");
  Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the GEMMs");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);

  cudaStream_t stream;
  if (Ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate")) {
    Blas(cublasSetStream(h, stream), "cublasSetStream");
    Blas(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, kN, kN, kN, &one, m.a, kN, m.b, kN, &zero, m.c,
                     kN),
         "cublasSgemm on the program's stream");
    Ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize after it");
    Blas(cublasSetStream(h, nullptr), "cublasSetStream back to the default stream");
    cudaStreamDestroy(stream);
  }
}

// Memory that cuBLAS was handed keeps the bytes the program put there.
void Contents(const Matrices& m) {
  std::vector<float> sent(size_t{kN} * kN), back(sent.size());
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<float>(i % 1000) * 0.5f;
  Ok(cudaMemcpy(m.a, sent.data(), sent.size() * sizeof(float), cudaMemcpyHostToDevice),
     "cudaMemcpy A to the device");
  Blas(cublasSetVector(kN, sizeof(float), sent.data(), 1, m.b, 1), "cublasSetVector B");
  Ok(cudaMemcpy(back.data(), m.a, back.size() * sizeof(float), cudaMemcpyDeviceToHost),
     "cudaMemcpy A back");
  Check(std::memcmp(sent.data(), back.data(), sent.size() * sizeof(float)) == 0,
        "A's bytes are what the program sent");
  std::vector<float> vec(kN, 0.0f);
  Blas(cublasGetVector(kN, sizeof(float), m.b, 1, vec.data(), 1), "cublasGetVector B");
  Check(std::memcmp(vec.data(), sent.data(), kN * sizeof(float)) == 0,
        "B's first column is what cublasSetVector put there");
}

// Under libvgpu: a slice filled to less than a handle's workspace refuses a new handle.
void FullSlice(size_t workspace) {
  std::vector<void*> fill;
  const size_t chunk = 16ull << 20;
  for (void* p = nullptr; FreeBytes() > workspace / 2 + chunk;) {
    if (cudaMalloc(&p, chunk) != cudaSuccess) break;
    fill.push_back(p);
  }
  cudaGetLastError();
  const size_t before = FreeBytes();
  std::printf("note: %zu MiB of the slice filled, %zu KiB left\n", fill.size() * 16, before >> 10);
  Check(before < workspace, "the slice has less left than a handle's workspace");
  cublasHandle_t h = nullptr;
  const cublasStatus_t s = cublasCreate(&h);
  std::printf("%s: cublasCreate in the full slice is refused (%s)\n",
              s != CUBLAS_STATUS_SUCCESS ? "ok" : "FAIL", cublasGetStatusName(s));
  if (s == CUBLAS_STATUS_SUCCESS) {
    ++g_failures;
    cublasDestroy(h);
  }
  // cuBLAS keeps its first, small allocation (132096 bytes with 13.1) after the workspace's
  // fails, on the simulated driver alone as under libvgpu: the slice charges what is held.
  const size_t kept = before - FreeBytes();
  std::printf("note: the refused handle keeps %zu bytes\n", kept);
  Check(kept < workspace / 8, "the refused handle keeps no workspace");
  for (void* p : fill) cudaFree(p);
  cudaGetLastError();
  if (Blas(cublasCreate(&h), "cublasCreate once the slice has room again")) cublasDestroy(h);
}

int Usage(const char* why) {
  std::fprintf(stderr, "cublas_program: %s\nusage: cublas_program --total BYTES [--slice] "
               "[--devices N]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned long long total = 0;
  bool slice = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--total") == 0 && i + 1 < argc) {
      total = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--devices") == 0 && i + 1 < argc) {
      ++i;
    } else if (std::strcmp(argv[i], "--slice") == 0) {
      slice = true;
    } else {
      return Usage("unknown argument");
    }
  }
  if (total == 0) return Usage("--total BYTES is required");

  size_t free0 = 0, total0 = 0;
  if (!Ok(cudaMemGetInfo(&free0, &total0), "cudaMemGetInfo before cuBLAS")) return 1;
  Check(total0 == total, "cudaMemGetInfo's total is the device's (or the slice's) memory");
  int version = 0;
  cublasHandle_t h = nullptr;
  if (!Blas(cublasCreate(&h), "cublasCreate")) return 1;
  const size_t free1 = FreeBytes();
  const size_t workspace = free0 - free1;
  Blas(cublasGetVersion(h, &version), "cublasGetVersion");
  std::printf("note: cuBLAS %d; the handle took %zu KiB\n", version, workspace >> 10);
  Check(free1 < free0 && workspace >= (1u << 20), "the handle's workspace is charged");

  Matrices m;
  if (Allocate(&m)) {
    Contents(m);
    Gemms(h, m);
  }
  Release(&m);
  const size_t free2 = FreeBytes();
  Blas(cublasDestroy(h), "cublasDestroy");
  Check(FreeBytes() - free2 == workspace, "cublasDestroy returns every byte the handle took");
  Check(FreeBytes() == free0, "the device's free memory is what it was before cuBLAS");
  if (slice) FullSlice(workspace);
  std::printf("%s: %d check(s) failed\n", g_failures == 0 ? "PASS" : "FAIL", g_failures);
  return g_failures == 0 ? 0 : 1;
}
