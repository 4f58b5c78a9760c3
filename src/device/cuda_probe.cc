#include "device/cuda_probe.h"

#include <dlfcn.h>

#include "device/nvml_backend.h"

namespace vgpu::device {
namespace {

// The few CUDA driver API entry points used, declared from the public API reference.
using CUresult = int;
using CUdevice = int;
constexpr int kAttributeMultiprocessorCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT

}  // namespace

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
