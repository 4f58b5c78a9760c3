#include "device/cuda_probe.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "device/nvml_backend.h"

namespace vgpu::device {
namespace {

// The few CUDA driver API entry points used, declared from the public API reference.
using CUresult = int;
using CUdevice = int;
constexpr int kAttributeMultiprocessorCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr CUresult kNotReady = 600;                // CUDA_ERROR_NOT_READY
constexpr unsigned kStreamNonBlocking = 1;         // CU_STREAM_NON_BLOCKING
using CUdeviceptr = unsigned long long;
using Handle = void*;  // CUcontext, CUstream, CUmodule, CUfunction

// vgpu_probe(unsigned* words, unsigned n): words[i] = ~words[i] for i < n.
constexpr char kProbePtx[] = R"(.version 6.0
.target sm_50
.address_size 64

.visible .entry vgpu_probe(.param .u64 words, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [words];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r6, [%rd4];
  not.b32 %r7, %r6;
  st.global.u32 [%rd4], %r7;
DONE:
  ret;
}
)";

struct ProbeApi {
  CUresult (*init)(unsigned);
  CUresult (*by_bus)(CUdevice*, const char*);
  CUresult (*name)(char*, int, CUdevice);
  CUresult (*ctx_create)(Handle*, unsigned, CUdevice);
  CUresult (*ctx_destroy)(Handle);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*host_alloc)(void**, size_t);
  CUresult (*host_free)(void*);
  CUresult (*stream_create)(Handle*, unsigned);
  CUresult (*stream_destroy)(Handle);
  CUresult (*stream_query)(Handle);
  CUresult (*htod)(CUdeviceptr, const void*, size_t, Handle);
  CUresult (*dtoh)(void*, CUdeviceptr, size_t, Handle);
  CUresult (*module_load)(Handle*, const void*);
  CUresult (*module_unload)(Handle);
  CUresult (*get_function)(Handle*, Handle, const char*);
  CUresult (*launch)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     Handle, void**, void**);
};

template <typename F>
bool Find(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

// What one probe made, freed in reverse order whatever happened.
struct ProbeResources {
  const ProbeApi* api;
  Handle ctx = nullptr;
  CUdeviceptr device = 0;
  void* host = nullptr;
  Handle stream = nullptr;
  Handle module = nullptr;
  ~ProbeResources() {
    if (ctx == nullptr) return;
    if (module != nullptr) api->module_unload(module);
    if (stream != nullptr) api->stream_destroy(stream);
    if (host != nullptr) api->host_free(host);
    if (device != 0) api->mem_free(device);
    api->ctx_destroy(ctx);
  }
};

}  // namespace

Status ProbeGpuWork(const std::string& library, const std::string& pci_bus_id, int timeout_ms) {
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Status::Unavailable("cannot load " + library + ": " + (why ? why : "unknown error"));
  }
  ProbeApi api{};
  if (!Find(lib, "cuInit", &api.init) || !Find(lib, "cuDeviceGetByPCIBusId", &api.by_bus) ||
      !Find(lib, "cuDeviceGetName", &api.name) || !Find(lib, "cuCtxCreate_v2", &api.ctx_create) ||
      !Find(lib, "cuCtxDestroy_v2", &api.ctx_destroy) ||
      !Find(lib, "cuMemAlloc_v2", &api.mem_alloc) || !Find(lib, "cuMemFree_v2", &api.mem_free) ||
      !Find(lib, "cuMemAllocHost_v2", &api.host_alloc) ||
      !Find(lib, "cuMemFreeHost", &api.host_free) ||
      !Find(lib, "cuStreamCreate", &api.stream_create) ||
      !Find(lib, "cuStreamDestroy_v2", &api.stream_destroy) ||
      !Find(lib, "cuStreamQuery", &api.stream_query) ||
      !Find(lib, "cuMemcpyHtoDAsync_v2", &api.htod) ||
      !Find(lib, "cuMemcpyDtoHAsync_v2", &api.dtoh) ||
      !Find(lib, "cuModuleLoadData", &api.module_load) ||
      !Find(lib, "cuModuleUnload", &api.module_unload) ||
      !Find(lib, "cuModuleGetFunction", &api.get_function) ||
      !Find(lib, "cuLaunchKernel", &api.launch)) {
    return Status::Unavailable(library + " lacks the CUDA driver entry points the probe needs");
  }
  auto fail = [](const char* step, CUresult r) {
    return Status::Unavailable(std::string("probe: ") + step + " failed with CUDA error " +
                               std::to_string(r));
  };
  CUresult r = api.init(0);
  if (r != 0) return fail("cuInit", r);
  CUdevice dev = 0;
  if ((r = api.by_bus(&dev, pci_bus_id.c_str())) != 0) return fail("cuDeviceGetByPCIBusId", r);
  char name[256] = {};
  if ((r = api.name(name, sizeof name, dev)) != 0) return fail("cuDeviceGetName", r);
  const bool simulated = std::strncmp(name, "vgpu simulated", 14) == 0;
  ProbeResources res{&api};
  if ((r = api.ctx_create(&res.ctx, 0, dev)) != 0) return fail("cuCtxCreate", r);
  constexpr unsigned kWords = 256 * 1024;  // 1 MiB
  constexpr size_t kBytes = kWords * sizeof(uint32_t);
  if ((r = api.mem_alloc(&res.device, kBytes)) != 0) return fail("cuMemAlloc", r);
  if ((r = api.host_alloc(&res.host, kBytes)) != 0) return fail("cuMemAllocHost", r);
  auto* words = static_cast<uint32_t*>(res.host);
  for (unsigned i = 0; i < kWords; ++i) words[i] = 0x9E3779B9u * (i + 1);
  if ((r = api.stream_create(&res.stream, kStreamNonBlocking)) != 0) {
    return fail("cuStreamCreate", r);
  }
  if ((r = api.module_load(&res.module, kProbePtx)) != 0) return fail("cuModuleLoadData", r);
  Handle function = nullptr;
  if ((r = api.get_function(&function, res.module, "vgpu_probe")) != 0) {
    return fail("cuModuleGetFunction", r);
  }
  if ((r = api.htod(res.device, res.host, kBytes, res.stream)) != 0) {
    return fail("cuMemcpyHtoDAsync", r);
  }
  unsigned n = kWords;
  void* args[] = {&res.device, &n};
  if ((r = api.launch(function, kWords / 256, 1, 1, 256, 1, 1, 0, res.stream, args, nullptr)) !=
      0) {
    return fail("cuLaunchKernel", r);
  }
  if ((r = api.dtoh(res.host, res.device, kBytes, res.stream)) != 0) {
    return fail("cuMemcpyDtoHAsync", r);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while ((r = api.stream_query(res.stream)) == kNotReady) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Unavailable("probe: the copy, kernel and copy did not complete within " +
                                 std::to_string(timeout_ms) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (r != 0) return fail("the probe's stream", r);
  for (unsigned i = 0; i < kWords; ++i) {
    const uint32_t pattern = 0x9E3779B9u * (i + 1);
    if (words[i] != (simulated ? pattern : ~pattern)) {
      return Status::Unavailable("probe: word " + std::to_string(i) +
                                 " read back wrong after the kernel");
    }
  }
  return Status::Ok();
}

Result<std::map<std::string, int>> ProbeSmCounts(const std::string& library) {
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Status::Unavailable("cannot load " + library + ": " + (why ? why : "unknown error"));
  }
  auto init = reinterpret_cast<CUresult (*)(unsigned int)>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CUresult (*)(int*)>(dlsym(lib, "cuDeviceGetCount"));
  auto get = reinterpret_cast<CUresult (*)(CUdevice*, int)>(dlsym(lib, "cuDeviceGet"));
  auto bus =
      reinterpret_cast<CUresult (*)(char*, int, CUdevice)>(dlsym(lib, "cuDeviceGetPCIBusId"));
  auto attr =
      reinterpret_cast<CUresult (*)(int*, int, CUdevice)>(dlsym(lib, "cuDeviceGetAttribute"));
  if (!init || !count || !get || !bus || !attr) {
    return Status::Unavailable(library + " lacks the CUDA driver entry points needed");
  }
  CUresult r = init(0);
  if (r != 0) return Status::Unavailable("cuInit failed with CUDA error " + std::to_string(r));
  int n = 0;
  if (count(&n) != 0) return Status::Unavailable("cuDeviceGetCount failed");
  std::map<std::string, int> out;
  for (int i = 0; i < n; ++i) {
    CUdevice dev = 0;
    char id[64] = {};
    int sms = 0;
    if (get(&dev, i) != 0 || bus(id, sizeof id, dev) != 0 ||
        attr(&sms, kAttributeMultiprocessorCount, dev) != 0) {
      continue;
    }
    out[NormalizePciBusId(id)] = sms;
  }
  // The driver stays loaded: unloading libcuda after cuInit is not supported.
  return out;
}

}  // namespace vgpu::device
