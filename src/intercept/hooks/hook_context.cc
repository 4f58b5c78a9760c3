// Context hooks: every context costs device memory the driver never reports to the program (its
// code, stacks, heaps). libvgpu charges Config::context_overhead bytes per context: per created
// context (cuCtxCreate*) until cuCtxDestroy, and once per device for the primary context while
// it is retained. When a context is destroyed or a primary context reset, the allocations made
// in it are gone too and are given back.
#include "intercept/hooks/hook_util.h"

namespace vgpu::intercept {
namespace {

class Locker {
 public:
  explicit Locker(pthread_mutex_t* m) : m_(m) { pthread_mutex_lock(m_); }
  ~Locker() { pthread_mutex_unlock(m_); }

 private:
  pthread_mutex_t* m_;
};

uint64_t Overhead() { return GetRuntime().config.context_overhead; }

template <typename Call>
CUresult CreateContext(CUcontext* ctx, CUdevice dev, Call call) {
  if (ctx == nullptr || dev < 0) return call();
  uint64_t overhead = Overhead();
  if (!ChargeOrRefuse(dev, overhead, "context creation")) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = call();
  if (r != CUDA_SUCCESS) {
    GetRuntime().accountant.Uncharge(dev, overhead);
    return r;
  }
  Track(ContextKey(*ctx), Space::kContext, dev, *ctx, overhead);
  return r;
}

CUresult DestroyContext(CUcontext ctx, CUresult (*real)(CUcontext)) {
  AllocTable& table = GetRuntime().table;
  AllocEntry entry;
  bool known = ctx != nullptr && table.Remove(ContextKey(ctx), Space::kContext, &entry);
  CUresult r = real(ctx);
  if (known) {
    if (r == CUDA_SUCCESS) {
      ReleaseEntry(entry);
    } else {
      table.Insert(entry);
    }
  }
  if (r == CUDA_SUCCESS) ReleaseContextAllocations(ctx);
  return r;
}

CUresult PrimaryRelease(CUdevice dev, CUresult (*real)(CUdevice)) {
  CUresult r = real(dev);
  if (r != CUDA_SUCCESS || dev < 0 || dev >= kMaxDevices) return r;
  ContextState& c = GetRuntime().contexts;
  CUcontext released = nullptr;
  uint64_t give_back = 0;
  {
    Locker lock(&c.mutex);
    if (c.primary_refs[dev] > 0) --c.primary_refs[dev];
    if (c.primary_refs[dev] == 0) {
      give_back = c.primary_charged[dev];
      c.primary_charged[dev] = 0;
      released = c.primary[dev];
    }
  }
  GetRuntime().accountant.Uncharge(dev, give_back);
  ReleaseContextAllocations(released);
  return r;
}

CUresult PrimaryReset(CUdevice dev, CUresult (*real)(CUdevice)) {
  CUresult r = real(dev);
  if (r != CUDA_SUCCESS || dev < 0 || dev >= kMaxDevices) return r;
  ContextState& c = GetRuntime().contexts;
  CUcontext reset = nullptr;
  uint64_t give_back = 0;
  {
    Locker lock(&c.mutex);
    // The primary context is destroyed whatever its retain count; the next retain re-creates it.
    c.primary_refs[dev] = 0;
    give_back = c.primary_charged[dev];
    c.primary_charged[dev] = 0;
    reset = c.primary[dev];
  }
  GetRuntime().accountant.Uncharge(dev, give_back);
  ReleaseContextAllocations(reset);
  return r;
}

}  // namespace

extern "C" CUresult cuCtxCreate(CUcontext* ctx, unsigned int flags, CUdevice dev) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuCtxCreate;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return CreateContext(ctx, dev, [&] { return real(ctx, flags, dev); });
}

extern "C" CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice dev) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuCtxCreate_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return CreateContext(ctx, dev, [&] { return real(ctx, flags, dev); });
}

extern "C" CUresult cuCtxCreate_v3(CUcontext* ctx, CUexecAffinityParam* params, int num_params,
                                   unsigned int flags, CUdevice dev) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuCtxCreate_v3;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return CreateContext(ctx, dev, [&] { return real(ctx, params, num_params, flags, dev); });
}

extern "C" CUresult cuCtxCreate_v4(CUcontext* ctx, CUctxCreateParams* params, unsigned int flags,
                                   CUdevice dev) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuCtxCreate_v4;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return CreateContext(ctx, dev, [&] { return real(ctx, params, flags, dev); });
}

extern "C" CUresult cuCtxDestroy(CUcontext ctx) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuCtxDestroy == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return DestroyContext(ctx, g_cuda.cuCtxDestroy);
}

extern "C" CUresult cuCtxDestroy_v2(CUcontext ctx) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuCtxDestroy_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return DestroyContext(ctx, g_cuda.cuCtxDestroy_v2);
}

extern "C" CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuDevicePrimaryCtxRetain;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (ctx == nullptr || dev < 0 || dev >= kMaxDevices) {
    if (dev >= kMaxDevices && ctx != nullptr && GetRuntime().config.any_memory_limit) {
      return CUDA_ERROR_OUT_OF_MEMORY;  // a device outside the accounted range
    }
    return real(ctx, dev);
  }
  ContextState& c = GetRuntime().contexts;
  Locker lock(&c.mutex);  // serialises retains: the first one charges
  uint64_t charge = 0;
  if (c.primary_refs[dev] == 0 && c.primary_charged[dev] == 0) {
    charge = Overhead();
    if (!ChargeOrRefuse(dev, charge, "primary context")) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUresult r = real(ctx, dev);
  if (r != CUDA_SUCCESS) {
    GetRuntime().accountant.Uncharge(dev, charge);
    return r;
  }
  bool first = c.primary_refs[dev] == 0;
  ++c.primary_refs[dev];
  c.primary_charged[dev] += charge;
  c.primary[dev] = *ctx;
  if (first && g_cuda.cuDeviceGetUuid != nullptr) {
    CUuuid uuid;
    if (g_cuda.cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) {
      static const char kHex[] = "0123456789abcdef";
      char text[64] = "GPU-";
      int pos = 4;
      for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) text[pos++] = '-';
        unsigned char b = static_cast<unsigned char>(uuid.bytes[i]);
        text[pos++] = kHex[b >> 4];
        text[pos++] = kHex[b & 15];
      }
      text[pos] = '\0';
      GetRuntime().accountant.SetDeviceUuid(dev, text);
    }
  }
  return r;
}

extern "C" CUresult cuDevicePrimaryCtxRelease(CUdevice dev) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuDevicePrimaryCtxRelease == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return PrimaryRelease(dev, g_cuda.cuDevicePrimaryCtxRelease);
}

extern "C" CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuDevicePrimaryCtxRelease_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return PrimaryRelease(dev, g_cuda.cuDevicePrimaryCtxRelease_v2);
}

extern "C" CUresult cuDevicePrimaryCtxReset(CUdevice dev) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuDevicePrimaryCtxReset == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return PrimaryReset(dev, g_cuda.cuDevicePrimaryCtxReset);
}

extern "C" CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  if (g_cuda.cuDevicePrimaryCtxReset_v2 == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return PrimaryReset(dev, g_cuda.cuDevicePrimaryCtxReset_v2);
}

}  // namespace vgpu::intercept
