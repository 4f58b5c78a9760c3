// Kernel launches. A launch is queued on the shared device timeline (timeline.h) with a duration
// chosen by the convention in docs/simgpu.md ("Kernel time"):
//   - a kernel whose name contains "sim_sleep_ns" runs for the nanoseconds given by its first
//     parameter, read as a 64-bit unsigned integer;
//   - a kernel whose name contains "sim_touch" runs for its first parameter's nanoseconds after
//     touching [second parameter, + third parameter bytes): managed pages in the range fault in
//     first, and the launching stream waits for them (managed.cc);
//   - any other kernel runs for the device's kernel_time (10 us by default) per wave, a wave
//     being sm_count * 2048 threads: duration = kernel_time * ceil(threads / (sms * 2048)).
#include <algorithm>
#include <cstring>

#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

bool FirstParamU64(void** params, void** extra, uint64_t* out) {
  if (params != nullptr && params[0] != nullptr) {
    std::memcpy(out, params[0], sizeof(*out));
    return true;
  }
  if (extra == nullptr) return false;
  void* buffer = nullptr;
  size_t size = 0;
  for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != nullptr) {
      size = *static_cast<size_t*>(extra[i + 1]);
    }
  }
  if (buffer == nullptr || size < sizeof(*out)) return false;
  std::memcpy(out, buffer, sizeof(*out));
  return true;
}

// The "sim_touch" convention: the stream waits for the faults of the managed range it touches.
void TouchManagedLocked(const LaunchArgs& a, Stream* s) {
  if (a.params == nullptr || a.params[0] == nullptr || a.params[1] == nullptr ||
      a.params[2] == nullptr) {
    return;
  }
  CUdeviceptr ptr = 0;
  uint64_t bytes = 0;
  std::memcpy(&ptr, a.params[1], sizeof(ptr));
  std::memcpy(&bytes, a.params[2], sizeof(bytes));
  Allocation* m = FindAllocationLocked(static_cast<uintptr_t>(ptr));
  if (m == nullptr || m->kind != AllocKind::kManaged || bytes == 0) return;
  uint64_t stall = ManagedTouchLocked(m, static_cast<uintptr_t>(ptr), bytes, true).stall_ns;
  if (stall == 0) return;
  StreamAdvanceLocked(s, std::max(MonotonicNs(), StreamReadyLocked(s)) + stall);
}

CUresult Launch(const LaunchArgs& a, CUstream h, bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (a.f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (a.params != nullptr && a.extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock<std::mutex> lock(D().mu);
  Stream* s = nullptr;
  if (CUresult rc = ResolveStreamLocked(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  const DeviceSpec& spec = Spec(s->ctx->device);
  if (CUresult rc = ValidateLaunch(a, spec); rc != CUDA_SUCCESS) return rc;
  uint64_t blocks = uint64_t{a.grid[0]} * a.grid[1] * a.grid[2];
  uint64_t threads = uint64_t{a.block[0]} * a.block[1] * a.block[2];
  uint64_t duration = KernelDurationNs(a.f, spec, blocks, threads, a.params, a.extra);
  CUresult rc = CUDA_SUCCESS;
  if (CaptureKernelLocked(s, a, duration, &rc)) return rc;
  if (a.f->touch_convention) TouchManagedLocked(a, s);
  return EnqueueKernelLocked(lock, s, duration);
}

LaunchArgs Args(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, unsigned shared, void** params, void** extra) {
  return LaunchArgs{AsFunction(f), {gx, gy, gz}, {bx, by, bz}, shared, params, extra};
}

CUresult LaunchEx(const CUlaunchConfig* c, CUfunction f, void** params, void** extra, bool pt) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return Launch(Args(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                     c->blockDimZ, c->sharedMemBytes, params, extra),
                c->hStream, pt);
}

}  // namespace

uint64_t KernelDurationNs(const Function* f, const DeviceSpec& spec, uint64_t grid_blocks,
                          uint64_t block_threads, void** params, void** extra) {
  if (f->sleep_convention || f->touch_convention) {
    uint64_t ns = 0;
    if (FirstParamU64(params, extra, &ns)) return ns;
  }
  uint64_t per_wave = static_cast<uint64_t>(spec.sm_count) * 2048;
  uint64_t threads = grid_blocks * block_threads;
  uint64_t waves = std::max<uint64_t>(1, (threads + per_wave - 1) / per_wave);
  return spec.kernel_ns * waves;
}

CUresult ValidateLaunch(const LaunchArgs& a, const DeviceSpec& spec) {
  (void)spec;
  const unsigned kMaxGrid[3] = {2147483647u, 65535u, 65535u};
  const unsigned kMaxBlock[3] = {1024u, 1024u, 64u};
  for (int i = 0; i < 3; ++i) {
    if (a.grid[i] == 0 || a.grid[i] > kMaxGrid[i]) return CUDA_ERROR_INVALID_VALUE;
    if (a.block[i] == 0 || a.block[i] > kMaxBlock[i]) return CUDA_ERROR_INVALID_VALUE;
  }
  if (uint64_t{a.block[0]} * a.block[1] * a.block[2] > 1024) return CUDA_ERROR_INVALID_VALUE;
  if (a.shared_bytes >
      static_cast<unsigned>(a.f->attributes[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES])) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX,
                                   unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream,
                                   void** kernelParams, void** extra) {
  SIMGPU_GUARD({
    return Launch(Args(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                       sharedMemBytes, kernelParams, extra),
                  hStream, false);
  });
}

SIMGPU_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX,
                                        unsigned int blockDimY, unsigned int blockDimZ,
                                        unsigned int sharedMemBytes, CUstream hStream,
                                        void** kernelParams, void** extra) {
  SIMGPU_GUARD({
    return Launch(Args(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                       sharedMemBytes, kernelParams, extra),
                  hStream, true);
  });
}

SIMGPU_API CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f,
                                     void** kernelParams, void** extra) {
  SIMGPU_GUARD({ return LaunchEx(config, f, kernelParams, extra, false); });
}

SIMGPU_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                          void** kernelParams, void** extra) {
  SIMGPU_GUARD({ return LaunchEx(config, f, kernelParams, extra, true); });
}

SIMGPU_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                              unsigned int gridDimY, unsigned int gridDimZ,
                                              unsigned int blockDimX, unsigned int blockDimY,
                                              unsigned int blockDimZ, unsigned int sharedMemBytes,
                                              CUstream hStream, void** kernelParams) {
  SIMGPU_GUARD({
    return Launch(Args(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                       sharedMemBytes, kernelParams, nullptr),
                  hStream, false);
  });
}

SIMGPU_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                   unsigned int gridDimY, unsigned int gridDimZ,
                                                   unsigned int blockDimX, unsigned int blockDimY,
                                                   unsigned int blockDimZ,
                                                   unsigned int sharedMemBytes, CUstream hStream,
                                                   void** kernelParams) {
  SIMGPU_GUARD({
    return Launch(Args(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                       sharedMemBytes, kernelParams, nullptr),
                  hStream, true);
  });
}
