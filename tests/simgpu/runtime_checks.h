// The checks of the CUDA runtime programs of tests/simgpu (cudart_program.cu, cublas_program.cu):
// each prints "ok: ..." or "FAIL: ..." and counts its failures in g_failures, which the program
// turns into its exit status.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

inline int g_failures = 0;

inline void Check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  if (!ok) ++g_failures;
}

// A runtime call that must succeed; reports the error name otherwise.
inline bool Ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("FAIL: %s: %s (%s)\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
    ++g_failures;
    return false;
  }
  return true;
}
