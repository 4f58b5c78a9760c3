// Kernel launch hooks. Without compute settings the added cost is one acquire load
// (initialised?), one relaxed load (compute limited?), the pause check of tenant_control.h (two
// relaxed loads), the launch counter (telemetry.h: a relaxed load and a relaxed atomic add on
// the process's own slot) and an indirect call: no allocation, no
// lock, no system call. With compute settings every launch path goes through the compute gate
// (gate.h): plain, per-thread-stream, Ex, cooperative, graph and the pre-4.0 launches alike.
#include "intercept/gate/gate.h"
#include "intercept/gate/kernel_estimates.h"
#include "intercept/gate/tenant_control.h"
#include "intercept/hooks/hook_util.h"

namespace vgpu::intercept {
namespace {

inline bool Limited() {
  return __builtin_expect(g_compute_limited.load(std::memory_order_relaxed), 0);
}

using KernelFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
using CooperativeFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, unsigned, CUstream, void**);
using ExFn = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
using GraphFn = CUresult (*)(CUgraphExec, CUstream);

struct KernelCall {
  KernelFn kernel;
  CooperativeFn cooperative;
  CUfunction f;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_mem;
  CUstream stream;
  void** params;
  void** extra;
};

CUresult RunKernel(void* p) {
  auto* c = static_cast<KernelCall*>(p);
  if (c->cooperative != nullptr) {
    return c->cooperative(c->f, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
                          c->block[2], c->shared_mem, c->stream, c->params);
  }
  return c->kernel(c->f, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2],
                   c->shared_mem, c->stream, c->params, c->extra);
}

__attribute__((noinline)) CUresult GatedKernel(KernelCall call, bool per_thread) {
  LaunchSite site;
  site.key =
      KernelEstimates::KernelKey(call.f, uint64_t{call.grid[0]} * call.grid[1] * call.grid[2]);
  site.family = KernelEstimates::FamilyKey(call.f);
  site.stream = call.stream;
  site.per_thread = per_thread;
  return CountLaunchResult(GatedLaunch(site, RunKernel, &call));
}

struct ExCall {
  ExFn fn;
  const CUlaunchConfig* config;
  CUfunction f;
  void** params;
  void** extra;
};

CUresult RunEx(void* p) {
  auto* c = static_cast<ExCall*>(p);
  return c->fn(c->config, c->f, c->params, c->extra);
}

__attribute__((noinline)) CUresult GatedEx(ExCall call, bool per_thread) {
  LaunchSite site;
  if (call.config != nullptr) {
    const CUlaunchConfig& c = *call.config;
    site.key = KernelEstimates::KernelKey(call.f, uint64_t{c.gridDimX} * c.gridDimY * c.gridDimZ);
    site.family = KernelEstimates::FamilyKey(call.f);
    site.stream = c.hStream;
  }
  site.per_thread = per_thread;
  return CountLaunchResult(GatedLaunch(site, RunEx, &call));
}

struct GraphCall {
  GraphFn fn;
  CUgraphExec exec;
  CUstream stream;
};

CUresult RunGraph(void* p) {
  auto* c = static_cast<GraphCall*>(p);
  return c->fn(c->exec, c->stream);
}

__attribute__((noinline)) CUresult GatedGraph(GraphCall call, bool per_thread) {
  LaunchSite site;
  site.key = KernelEstimates::GraphKey(call.exec);
  site.family = site.key;
  site.stream = call.stream;
  site.per_thread = per_thread;
  return CountGraphLaunchResult(GatedLaunch(site, RunGraph, &call));
}

struct LegacyCall {
  CUresult (*launch)(CUfunction);
  CUresult (*grid)(CUfunction, int, int);
  CUresult (*grid_async)(CUfunction, int, int, CUstream);
  CUfunction f;
  int width;
  int height;
  CUstream stream;
};

CUresult RunLegacy(void* p) {
  auto* c = static_cast<LegacyCall*>(p);
  if (c->launch != nullptr) return c->launch(c->f);
  if (c->grid != nullptr) return c->grid(c->f, c->width, c->height);
  return c->grid_async(c->f, c->width, c->height, c->stream);
}

__attribute__((noinline)) CUresult GatedLegacy(LegacyCall call) {
  LaunchSite site;
  uint64_t blocks = static_cast<uint64_t>(call.width > 0 ? call.width : 1) *
                    static_cast<uint64_t>(call.height > 0 ? call.height : 1);
  site.key = KernelEstimates::KernelKey(call.f, blocks);
  site.family = KernelEstimates::FamilyKey(call.f);
  site.stream = call.stream;
  return CountLaunchResult(GatedLaunch(site, RunLegacy, &call));
}

}  // namespace

extern "C" CUresult cuLaunchKernel(CUfunction f, unsigned int grid_x, unsigned int grid_y,
                                   unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                                   unsigned int block_z, unsigned int shared_mem, CUstream stream,
                                   void** params, void** extra) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchKernel;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  HoldIfPaused();
  if (!Limited()) {
    return CountLaunchResult(real(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem,
                                  stream, params, extra));
  }
  return GatedKernel({real,
                      nullptr,
                      f,
                      {grid_x, grid_y, grid_z},
                      {block_x, block_y, block_z},
                      shared_mem,
                      stream,
                      params,
                      extra},
                     false);
}

extern "C" CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int grid_x, unsigned int grid_y,
                                        unsigned int grid_z, unsigned int block_x,
                                        unsigned int block_y, unsigned int block_z,
                                        unsigned int shared_mem, CUstream stream, void** params,
                                        void** extra) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchKernel_ptsz;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  HoldIfPaused();
  if (!Limited()) {
    return CountLaunchResult(real(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem,
                                  stream, params, extra));
  }
  return GatedKernel({real,
                      nullptr,
                      f,
                      {grid_x, grid_y, grid_z},
                      {block_x, block_y, block_z},
                      shared_mem,
                      stream,
                      params,
                      extra},
                     true);
}

extern "C" CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                     void** extra) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchKernelEx;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  HoldIfPaused();
  if (!Limited()) return CountLaunchResult(real(config, f, params, extra));
  return GatedEx({real, config, f, params, extra}, false);
}

extern "C" CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                          void** extra) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchKernelEx_ptsz;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  HoldIfPaused();
  if (!Limited()) return CountLaunchResult(real(config, f, params, extra));
  return GatedEx({real, config, f, params, extra}, true);
}

extern "C" CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int grid_x,
                                              unsigned int grid_y, unsigned int grid_z,
                                              unsigned int block_x, unsigned int block_y,
                                              unsigned int block_z, unsigned int shared_mem,
                                              CUstream stream, void** params) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchCooperativeKernel;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  HoldIfPaused();
  if (!Limited()) {
    return CountLaunchResult(
        real(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, stream, params));
  }
  return GatedKernel({nullptr,
                      real,
                      f,
                      {grid_x, grid_y, grid_z},
                      {block_x, block_y, block_z},
                      shared_mem,
                      stream,
                      params,
                      nullptr},
                     false);
}

extern "C" CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int grid_x,
                                                   unsigned int grid_y, unsigned int grid_z,
                                                   unsigned int block_x, unsigned int block_y,
                                                   unsigned int block_z, unsigned int shared_mem,
                                                   CUstream stream, void** params) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchCooperativeKernel_ptsz;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  HoldIfPaused();
  if (!Limited()) {
    return CountLaunchResult(
        real(f, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, stream, params));
  }
  return GatedKernel({nullptr,
                      real,
                      f,
                      {grid_x, grid_y, grid_z},
                      {block_x, block_y, block_z},
                      shared_mem,
                      stream,
                      params,
                      nullptr},
                     true);
}

extern "C" CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGraphLaunch;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  HoldIfPaused();
  if (!Limited()) return CountGraphLaunchResult(real(exec, stream));
  return GatedGraph({real, exec, stream}, false);
}

extern "C" CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGraphLaunch_ptsz;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  HoldIfPaused();
  if (!Limited()) return CountGraphLaunchResult(real(exec, stream));
  return GatedGraph({real, exec, stream}, true);
}

extern "C" CUresult cuLaunch(CUfunction f) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunch;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  HoldIfPaused();
  if (!Limited()) return CountLaunchResult(real(f));
  return GatedLegacy({real, nullptr, nullptr, f, 1, 1, nullptr});
}

extern "C" CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchGrid;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  HoldIfPaused();
  if (!Limited()) return CountLaunchResult(real(f, grid_width, grid_height));
  return GatedLegacy({nullptr, real, nullptr, f, grid_width, grid_height, nullptr});
}

extern "C" CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height,
                                      CUstream stream) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuLaunchGridAsync;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  HoldIfPaused();
  if (!Limited()) return CountLaunchResult(real(f, grid_width, grid_height, stream));
  return GatedLegacy({nullptr, nullptr, real, f, grid_width, grid_height, stream});
}

}  // namespace vgpu::intercept
