// A CUDA driver API program for the multi-GPU end-to-end test: written against the toolkit's
// cuda.h and linked with -lcuda (the simulated GPU), run in a container (libvgpu.so preloaded).
//
//   multi_gpu_worker [--hold] BYTES...
//
// Prints "count N" (the devices the program sees) and "device.<i> UUID" for each ordinal i; then,
// for the i-th BYTES argument, makes device i's primary context current, allocates BYTES with
// cuMemAlloc and then 1 byte more, printing "first.<i> RC" and "extra.<i> RC" (CUresult names).
// What it allocated stays allocated. With --hold it then prints "ready" and holds everything
// until stdin closes. Exit status 0 unless a call other than the allocations fails.
#include <cuda.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

const char* Name(CUresult r) {
  const char* name = "?";
  cuGetErrorName(r, &name);
  return name;
}

bool Check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "multi_gpu_worker: %s failed: %s\n", what, Name(r));
  return false;
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it.
std::string FormatUuid(const CUuuid& uuid) {
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    out += hex;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  bool hold = false;
  std::vector<uint64_t> sizes;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--hold") {
      hold = true;
    } else {
      sizes.push_back(std::strtoull(argv[i], nullptr, 10));
    }
  }
  int count = 0;
  if (!Check(cuInit(0), "cuInit") || !Check(cuDeviceGetCount(&count), "cuDeviceGetCount")) {
    return 1;
  }
  std::printf("count %d\n", count);
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    CUuuid uuid;
    if (!Check(cuDeviceGet(&dev, i), "cuDeviceGet") ||
        !Check(cuDeviceGetUuid(&uuid, dev), "cuDeviceGetUuid")) {
      return 1;
    }
    std::printf("device.%d %s\n", i, FormatUuid(uuid).c_str());
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    CUdevice dev;
    CUcontext ctx;
    if (!Check(cuDeviceGet(&dev, static_cast<int>(i)), "cuDeviceGet") ||
        !Check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
        !Check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent")) {
      return 1;
    }
    CUdeviceptr first = 0, extra = 0;
    std::printf("first.%zu %s\n", i, Name(cuMemAlloc(&first, sizes[i])));
    std::printf("extra.%zu %s\n", i, Name(cuMemAlloc(&extra, 1)));
  }
  if (hold) {
    std::printf("ready\n");
    char buf[64];
    while (read(0, buf, sizeof buf) > 0) {
    }
  }
  return 0;
}
