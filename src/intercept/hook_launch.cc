// Kernel launch hooks. Today they pass through; compute sharing gates launches here when a
// compute limit is set. With no compute limit the added cost is one acquire load (initialised?),
// one relaxed load (compute limited?) and an indirect call: no allocation, no lock, no system
// call.
#include "intercept/hook_util.h"

namespace vgpu::intercept {
namespace {

// Where compute sharing will wait for its share of the device. Kept out of line so that the
// common path stays small.
__attribute__((noinline)) void GateLaunch() {}

inline void MaybeGate() {
  if (__builtin_expect(g_compute_limited.load(std::memory_order_relaxed), 0)) GateLaunch();
}

}  // namespace

extern "C" CUresult cuLaunchKernel(CUfunction f, unsigned int grid_x, unsigned int grid_y,
                                   unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                                   unsigned int block_z, unsigned int shared_mem, CUstream stream,
                                   void** params, void** extra) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchKernel;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  MaybeGate();
  return real(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, stream, params,
              extra);
}

extern "C" CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int grid_x, unsigned int grid_y,
                                        unsigned int grid_z, unsigned int block_x,
                                        unsigned int block_y, unsigned int block_z,
                                        unsigned int shared_mem, CUstream stream, void** params,
                                        void** extra) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchKernel_ptsz;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  MaybeGate();
  return real(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, stream, params,
              extra);
}

extern "C" CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                     void** extra) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchKernelEx;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  MaybeGate();
  return real(config, f, params, extra);
}

extern "C" CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                          void** extra) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchKernelEx_ptsz;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  MaybeGate();
  return real(config, f, params, extra);
}

extern "C" CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int grid_x,
                                              unsigned int grid_y, unsigned int grid_z,
                                              unsigned int block_x, unsigned int block_y,
                                              unsigned int block_z, unsigned int shared_mem,
                                              CUstream stream, void** params) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchCooperativeKernel;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  MaybeGate();
  return real(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, stream, params);
}

extern "C" CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int grid_x,
                                                   unsigned int grid_y, unsigned int grid_z,
                                                   unsigned int block_x, unsigned int block_y,
                                                   unsigned int block_z, unsigned int shared_mem,
                                                   CUstream stream, void** params) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchCooperativeKernel_ptsz;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  MaybeGate();
  return real(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, stream, params);
}

extern "C" CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGraphLaunch;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  MaybeGate();
  return real(exec, stream);
}

extern "C" CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGraphLaunch_ptsz;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  MaybeGate();
  return real(exec, stream);
}

}  // namespace vgpu::intercept
