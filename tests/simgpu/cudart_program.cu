// A CUDA runtime program (built by nvcc twice: with the shared and with the static runtime) that
// checks what NVIDIA documents for the runtime API, on whatever driver it runs on. On the
// simulated GPU (tests/simgpu/cudart_check.sh) it runs without libvgpu and under libvgpu with a
// memory limit.
//
//   cudart_program --total BYTES [--slice] [--devices N]
//
// --total: the memory cudaMemGetInfo and cudaGetDeviceProperties must report for device 0 (the
// device's, or the slice's under libvgpu). --slice: also, under libvgpu, every device-memory
// path of the runtime (cudaMalloc, cudaMallocManaged, cudaMallocPitch, cudaMalloc3D,
// cudaMallocAsync from the default and an explicit pool, cudaMallocArray, mipmapped arrays, and
// virtual memory management through the driver entry points the runtime hands out) is
// refused past the slice's free memory and charged within it, host allocations are not charged,
// vLLM's start-up pattern sees the slice, and the filled slice refuses one allocation more with
// cudaErrorMemoryAllocation. --devices: the device count.
//
// Kernels do not compute on the simulated GPU: the checks look at memory that copies and memsets
// move, at launch errors and at times on the timeline (a kernel whose name contains
// "sim_sleep_ns" runs for its first parameter's nanoseconds there), never at kernel results.
// Prints "ok: ..." or "FAIL: ..." per check; exits 0 when all pass, 1 otherwise, 2 on bad usage.
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime_checks.h"

namespace {

void Expect(cudaError_t got, cudaError_t want, const char* what) {
  if (got == want) {
    std::printf("ok: %s gives %s\n", what, cudaGetErrorName(want));
  } else {
    std::printf("FAIL: %s gives %s, not %s\n", what, cudaGetErrorName(got), cudaGetErrorName(want));
    ++g_failures;
  }
}

__device__ int g_counter = 42;
__device__ float g_table[64];

__global__ void Scale(float* data, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

// Runs for `ns` nanoseconds on the simulated GPU (its name carries the marker).
__global__ void sim_sleep_ns_kernel(unsigned long long ns) { (void)ns; }

constexpr unsigned long long kMs = 1000000ULL;

void Devices(int want_devices, size_t total) {
  int n = -1;
  if (Ok(cudaGetDeviceCount(&n), "cudaGetDeviceCount")) {
    Check(n == want_devices, "cudaGetDeviceCount gives the device count");
  }
  int driver = 0;
  int runtime = 0;
  Ok(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  Ok(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  Check(driver >= runtime && runtime >= 12000, "the driver is at least as new as the runtime");
  cudaDeviceProp p{};
  if (Ok(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties")) {
    Check(p.totalGlobalMem == total, "totalGlobalMem is the device's (or the slice's) memory");
    Check(p.major * 10 + p.minor >= 70, "compute capability is 7.0 or newer");
    Check(p.multiProcessorCount > 0 && p.warpSize == 32 && p.maxThreadsPerBlock == 1024,
          "SM count, warp size and threads per block");
    Check(std::strlen(p.name) > 0, "the device has a name");
  }
  int sms = 0;
  Ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
  Check(sms == p.multiProcessorCount, "cudaDeviceGetAttribute agrees with the properties");
  Expect(cudaSetDevice(want_devices), cudaErrorInvalidDevice, "cudaSetDevice past the last device");
  Expect(cudaGetDeviceProperties(&p, -1), cudaErrorInvalidDevice, "properties of device -1");
  Ok(cudaSetDevice(0), "cudaSetDevice(0)");
  int dev = -1;
  Ok(cudaGetDevice(&dev), "cudaGetDevice");
  Check(dev == 0, "cudaGetDevice gives the device set");
}

void Memory(size_t total) {
  size_t free0 = 0;
  size_t total0 = 0;
  Ok(cudaMemGetInfo(&free0, &total0), "cudaMemGetInfo");
  Check(total0 == total, "cudaMemGetInfo's total is the device's (or the slice's) memory");
  Check(free0 <= total0, "free memory is at most the total");

  const size_t n = 1 << 20;  // floats: 4 MiB
  float* d = nullptr;
  if (!Ok(cudaMalloc(&d, n * sizeof(float)), "cudaMalloc 4 MiB")) return;
  size_t free1 = 0;
  Ok(cudaMemGetInfo(&free1, &total0), "cudaMemGetInfo after cudaMalloc");
  Check(free0 - free1 >= n * sizeof(float), "free memory drops by at least the allocation");

  std::vector<float> host(n);
  std::vector<float> back(n, -1.0f);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i) * 0.5f;
  Ok(cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy to the device");
  float* d2 = nullptr;
  Ok(cudaMalloc(&d2, n * sizeof(float)), "cudaMalloc second buffer");
  Ok(cudaMemcpy(d2, d, n * sizeof(float), cudaMemcpyDeviceToDevice), "device-to-device copy");
  Ok(cudaMemcpy(back.data(), d2, n * sizeof(float), cudaMemcpyDeviceToHost), "copy back");
  Check(back == host, "the bytes come back as they were sent (host, device, device, host)");

  Ok(cudaMemset(d2, 0x7f, 4096), "cudaMemset");
  std::vector<unsigned char> bytes(8192);
  Ok(cudaMemcpy(bytes.data(), d2, bytes.size(), cudaMemcpyDefault), "copy with cudaMemcpyDefault");
  bool set = true;
  for (size_t i = 0; i < 4096; ++i) set = set && bytes[i] == 0x7f;
  Check(set && std::memcmp(bytes.data() + 4096, reinterpret_cast<const char*>(host.data()) + 4096,
                           4096) == 0,
        "cudaMemset sets its bytes and no others");

  float* pinned = nullptr;
  if (Ok(cudaMallocHost(&pinned, 4096), "cudaMallocHost")) {
    pinned[0] = 3.0f;
    Ok(cudaMemcpy(d, pinned, sizeof(float), cudaMemcpyHostToDevice), "copy from pinned memory");
    Ok(cudaFreeHost(pinned), "cudaFreeHost");
  }
  float* managed = nullptr;
  if (Ok(cudaMallocManaged(&managed, 4096), "cudaMallocManaged")) {
    managed[7] = 9.0f;
    float v = 0;
    Ok(cudaMemcpy(&v, managed + 7, sizeof(v), cudaMemcpyDefault), "copy from managed memory");
    Check(v == 9.0f, "managed memory written by the host reads back through the runtime");
    Ok(cudaFree(managed), "cudaFree managed");
  }
  size_t pitch = 0;
  void* pitched = nullptr;
  if (Ok(cudaMallocPitch(&pitched, &pitch, 1000, 16), "cudaMallocPitch")) {
    Check(pitch >= 1000, "the pitch covers a row");
    Ok(cudaFree(pitched), "cudaFree pitched");
  }

  // The module's globals (__device__ variables) hold their initial values and take copies.
  int counter = 0;
  Ok(cudaMemcpyFromSymbol(&counter, g_counter, sizeof(counter)), "cudaMemcpyFromSymbol");
  Check(counter == 42, "a __device__ variable holds its initializer");
  float table[64];
  for (int i = 0; i < 64; ++i) table[i] = static_cast<float>(i * i);
  Ok(cudaMemcpyToSymbol(g_table, table, sizeof(table)), "cudaMemcpyToSymbol");
  float table_back[64] = {};
  Ok(cudaMemcpyFromSymbol(table_back, g_table, sizeof(table_back)), "cudaMemcpyFromSymbol table");
  Check(std::memcmp(table, table_back, sizeof(table)) == 0, "a __device__ array takes a copy");
  size_t symbol_size = 0;
  Ok(cudaGetSymbolSize(&symbol_size, g_table), "cudaGetSymbolSize");
  Check(symbol_size == sizeof(table), "cudaGetSymbolSize gives the variable's size");

  Ok(cudaFree(d2), "cudaFree");
  Ok(cudaFree(d), "cudaFree");
  Expect(cudaFree(reinterpret_cast<void*>(0x10)), cudaErrorInvalidValue,
         "cudaFree of no allocation");
  void* huge = nullptr;
  Expect(cudaMalloc(&huge, total * 2), cudaErrorMemoryAllocation, "cudaMalloc of twice the memory");
  Expect(cudaGetLastError(), cudaErrorMemoryAllocation, "cudaGetLastError after it");
  Expect(cudaGetLastError(), cudaSuccess, "a second cudaGetLastError");
}

double ElapsedMs(cudaEvent_t a, cudaEvent_t b) {
  float ms = -1;
  Ok(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  return ms;
}

void Launches() {
  float* d = nullptr;
  if (!Ok(cudaMalloc(&d, 1024 * sizeof(float)), "cudaMalloc for kernels")) return;
  Scale<<<4, 256>>>(d, 1024, 2.0f);
  Expect(cudaGetLastError(), cudaSuccess, "a <<<>>> launch");
  Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  // A real GPU reports cudaErrorInvalidConfiguration; the simulated driver answers with
  // CUDA_ERROR_INVALID_VALUE, as cuLaunchKernel documents, which the runtime passes on.
  Scale<<<1, 2048>>>(d, 1024, 2.0f);
  cudaError_t e = cudaGetLastError();
  Check(e == cudaErrorInvalidConfiguration || e == cudaErrorInvalidValue,
        "a launch of 2048 threads per block is refused");
  Scale<<<dim3(1, 70000), 32>>>(d, 1024, 2.0f);
  e = cudaGetLastError();
  Check(e == cudaErrorInvalidConfiguration || e == cudaErrorInvalidValue,
        "a grid of 70000 blocks in y is refused");
  Expect(cudaGetLastError(), cudaSuccess, "cudaGetLastError after a refused launch");

  int n = 1024;
  float factor = 3.0f;
  void* args[] = {&d, &n, &factor};
  Expect(cudaLaunchKernel(reinterpret_cast<const void*>(&Scale), dim3(4), dim3(256), args, 0, 0),
         cudaSuccess, "cudaLaunchKernel");
  Expect(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&Scale), dim3(4), dim3(256),
                                     args, 0, 0),
         cudaSuccess, "cudaLaunchCooperativeKernel");
  cudaFuncAttributes attr{};
  Ok(cudaFuncGetAttributes(&attr, Scale), "cudaFuncGetAttributes");
  Check(attr.maxThreadsPerBlock > 0, "a kernel's attributes");

  // Kernel time on the timeline: 30 ms between two events, and a stream that is busy meanwhile.
  cudaStream_t s = nullptr;
  Ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaEvent_t a = nullptr;
  cudaEvent_t b = nullptr;
  Ok(cudaEventCreate(&a), "cudaEventCreate");
  Ok(cudaEventCreate(&b), "cudaEventCreate");
  Ok(cudaEventRecord(a, s), "cudaEventRecord");
  sim_sleep_ns_kernel<<<1, 32, 0, s>>>(30 * kMs);
  Ok(cudaEventRecord(b, s), "cudaEventRecord");
  Expect(cudaStreamQuery(s), cudaErrorNotReady, "cudaStreamQuery while a kernel runs");
  Expect(cudaEventQuery(b), cudaErrorNotReady, "cudaEventQuery before the kernel ends");
  auto t0 = std::chrono::steady_clock::now();
  Ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  double waited =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  Expect(cudaStreamQuery(s), cudaSuccess, "cudaStreamQuery after the kernel");
  double ms = ElapsedMs(a, b);
  Check(ms >= 29.0 && ms <= 130.0, "the events measure the kernel's 30 ms");
  Check(waited >= 20.0, "cudaStreamSynchronize waits for the kernel");

  // A stream waits for an event of another.
  cudaStream_t s2 = nullptr;
  Ok(cudaStreamCreate(&s2), "cudaStreamCreate");
  cudaEvent_t c = nullptr;
  cudaEvent_t f = nullptr;
  Ok(cudaEventCreate(&c), "cudaEventCreate");
  Ok(cudaEventCreate(&f), "cudaEventCreate");
  Ok(cudaEventRecord(a, s), "cudaEventRecord");
  sim_sleep_ns_kernel<<<1, 32, 0, s>>>(20 * kMs);
  Ok(cudaEventRecord(c, s), "cudaEventRecord");
  Ok(cudaStreamWaitEvent(s2, c, 0), "cudaStreamWaitEvent");
  sim_sleep_ns_kernel<<<1, 32, 0, s2>>>(10 * kMs);
  Ok(cudaEventRecord(f, s2), "cudaEventRecord");
  Ok(cudaEventSynchronize(f), "cudaEventSynchronize");
  ms = ElapsedMs(a, f);
  Check(ms >= 29.0 && ms <= 130.0,
        "a stream waiting on another's event runs after it (20 + 10 ms)");

  Ok(cudaEventDestroy(a), "cudaEventDestroy");
  Ok(cudaEventDestroy(b), "cudaEventDestroy");
  Ok(cudaEventDestroy(c), "cudaEventDestroy");
  Ok(cudaEventDestroy(f), "cudaEventDestroy");
  Ok(cudaStreamDestroy(s2), "cudaStreamDestroy");
  Ok(cudaStreamDestroy(s), "cudaStreamDestroy");
  Ok(cudaFree(d), "cudaFree");
}

void Graphs() {
  cudaStream_t s = nullptr;
  Ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  const size_t bytes = 1 << 16;
  std::vector<unsigned char> src(bytes);
  std::vector<unsigned char> dst(bytes, 0);
  for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i * 7);
  unsigned char* d = nullptr;
  if (!Ok(cudaMalloc(&d, bytes), "cudaMalloc for graphs")) return;

  // Stream capture: a copy in, a kernel and a copy out become a graph; nothing runs before the
  // graph is launched.
  cudaGraph_t g = nullptr;
  Ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  Ok(cudaStreamIsCapturing(s, &status), "cudaStreamIsCapturing");
  Check(status == cudaStreamCaptureStatusActive, "the stream is capturing");
  Ok(cudaMemcpyAsync(d, src.data(), bytes, cudaMemcpyHostToDevice, s), "captured copy in");
  sim_sleep_ns_kernel<<<1, 32, 0, s>>>(15 * kMs);
  Ok(cudaGetLastError(), "captured launch");
  Ok(cudaMemcpyAsync(dst.data(), d, bytes, cudaMemcpyDeviceToHost, s), "captured copy out");
  Ok(cudaStreamEndCapture(s, &g), "cudaStreamEndCapture");
  size_t nodes = 0;
  Ok(cudaGraphGetNodes(g, nullptr, &nodes), "cudaGraphGetNodes");
  Check(nodes == 3, "the captured graph has three nodes");
  Check(dst[1] == 0, "nothing ran during capture");
  cudaGraphExec_t x = nullptr;
  if (Ok(cudaGraphInstantiate(&x, g, 0), "cudaGraphInstantiate")) {
    cudaEvent_t a = nullptr;
    cudaEvent_t b = nullptr;
    Ok(cudaEventCreate(&a), "cudaEventCreate");
    Ok(cudaEventCreate(&b), "cudaEventCreate");
    Ok(cudaEventRecord(a, s), "cudaEventRecord");
    Ok(cudaGraphLaunch(x, s), "cudaGraphLaunch");
    Ok(cudaEventRecord(b, s), "cudaEventRecord");
    Ok(cudaStreamSynchronize(s), "cudaStreamSynchronize after the graph");
    Check(dst == src, "the captured copies move the bytes when the graph runs");
    float ms = 0;
    Ok(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    Check(ms >= 14.0f, "the graph's kernel node takes its 15 ms");
    Ok(cudaGraphExecDestroy(x), "cudaGraphExecDestroy");
    Ok(cudaEventDestroy(a), "cudaEventDestroy");
    Ok(cudaEventDestroy(b), "cudaEventDestroy");
  }
  Ok(cudaGraphDestroy(g), "cudaGraphDestroy");

  // An explicit graph: a kernel node, then a memset node after it.
  cudaGraph_t e = nullptr;
  Ok(cudaGraphCreate(&e, 0), "cudaGraphCreate");
  unsigned long long ns = 10 * kMs;
  void* args[] = {&ns};
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(&sim_sleep_ns_kernel);
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(32);
  kp.kernelParams = args;
  cudaGraphNode_t kn = nullptr;
  Ok(cudaGraphAddKernelNode(&kn, e, nullptr, 0, &kp), "cudaGraphAddKernelNode");
  cudaMemsetParams mp{};
  mp.dst = d;
  mp.value = 0x11;
  mp.elementSize = 1;
  mp.width = 256;
  mp.height = 1;
  cudaGraphNode_t mn = nullptr;
  Ok(cudaGraphAddMemsetNode(&mn, e, &kn, 1, &mp), "cudaGraphAddMemsetNode");
  cudaGraphExec_t ex = nullptr;
  if (Ok(cudaGraphInstantiate(&ex, e, 0), "cudaGraphInstantiate explicit")) {
    auto t0 = std::chrono::steady_clock::now();
    Ok(cudaGraphLaunch(ex, s), "cudaGraphLaunch explicit");
    Ok(cudaStreamSynchronize(s), "cudaStreamSynchronize explicit");
    double waited =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    Check(waited >= 8.0, "the explicit graph's kernel node takes its 10 ms");
    unsigned char first[257];
    Ok(cudaMemcpy(first, d, sizeof(first), cudaMemcpyDeviceToHost), "copy back");
    Check(first[0] == 0x11 && first[255] == 0x11 && first[256] == src[256],
          "the memset node sets its 256 bytes");
    Ok(cudaGraphExecDestroy(ex), "cudaGraphExecDestroy");
  }
  Ok(cudaGraphDestroy(e), "cudaGraphDestroy");
  Ok(cudaFree(d), "cudaFree");
  Ok(cudaStreamDestroy(s), "cudaStreamDestroy");
}

// Free device memory as the runtime reports it (0 on failure, reported).
size_t FreeBytes() {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  Ok(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return free_bytes;
}

// One allocation path of the runtime, under libvgpu (the twins of the driver-API memory tests in
// src/intercept): an allocation of more than the slice's free memory is refused with
// cudaErrorMemoryAllocation and takes nothing; one of `bytes` (16 MiB or so) succeeds and is
// charged at least its size; its free gives it back. `alloc(bytes, &handle)` allocates,
// `release(handle)` frees.
template <typename Alloc, typename Release>
void Path(const char* name, Alloc alloc, Release release) {
  char what[160];
  const size_t before = FreeBytes();
  void* handle = nullptr;
  std::snprintf(what, sizeof what, "%s of the slice's free memory + 64 MiB", name);
  Expect(alloc(before + (64ull << 20), &handle), cudaErrorMemoryAllocation, what);
  cudaGetLastError();
  std::snprintf(what, sizeof what, "%s refused takes nothing from the slice", name);
  Check(FreeBytes() == before, what);
  const size_t bytes = 16ull << 20;
  std::snprintf(what, sizeof what, "%s of 16 MiB", name);
  if (!Ok(alloc(bytes, &handle), what)) return;
  const size_t during = FreeBytes();
  std::snprintf(what, sizeof what, "%s is charged to the slice (at least its size)", name);
  Check(during + bytes <= before, what);
  std::snprintf(what, sizeof what, "%s freed", name);
  Ok(release(handle), what);
  std::snprintf(what, sizeof what, "%s's memory returns to the slice", name);
  Check(FreeBytes() == before, what);
}

// Virtual memory management as PyTorch's expandable segments use it: the driver's VMM entry
// points from cudaGetDriverEntryPointByVersion, physical memory created, mapped into a reserved
// range and made accessible. What libvgpu charges is the physical memory (cuMemCreate).
struct VmmApi {
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
};

template <typename F>
bool EntryPoint(const char* name, F* fn) {
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  void* p = nullptr;
  char what[96];
  std::snprintf(what, sizeof what, "cudaGetDriverEntryPointByVersion(%s)", name);
  if (!Ok(cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found), what)) {
    return false;
  }
  Check(found == cudaDriverEntryPointSuccess && p != nullptr, what);
  *fn = reinterpret_cast<F>(p);
  return p != nullptr;
}

struct VmmAllocation {
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr va = 0;
  size_t size = 0;
};

cudaError_t AsRuntimeError(CUresult r) {
  if (r == CUDA_SUCCESS) return cudaSuccess;
  return r == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : cudaErrorUnknown;
}

void VmmPath() {
  static VmmApi api;
  if (!EntryPoint("cuMemGetAllocationGranularity", &api.granularity) ||
      !EntryPoint("cuMemCreate", &api.create) || !EntryPoint("cuMemRelease", &api.release) ||
      !EntryPoint("cuMemAddressReserve", &api.reserve) ||
      !EntryPoint("cuMemAddressFree", &api.address_free) || !EntryPoint("cuMemMap", &api.map) ||
      !EntryPoint("cuMemUnmap", &api.unmap) || !EntryPoint("cuMemSetAccess", &api.set_access)) {
    return;
  }
  Path(
      "cuMemCreate from the runtime's entry point",
      [](size_t n, void** h) {
        CUmemAllocationProp prop{};
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = 0;
        size_t g = 0;
        CUresult r = api.granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
        if (r != CUDA_SUCCESS) return AsRuntimeError(r);
        auto* a = new VmmAllocation;
        a->size = (n + g - 1) / g * g;
        if ((r = api.create(&a->handle, a->size, &prop, 0)) != CUDA_SUCCESS) {
          delete a;
          return AsRuntimeError(r);
        }
        CUmemAccessDesc access{};
        access.location = prop.location;
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        if ((r = api.reserve(&a->va, a->size, 0, 0, 0)) != CUDA_SUCCESS ||
            (r = api.map(a->va, a->size, 0, a->handle, 0)) != CUDA_SUCCESS ||
            (r = api.set_access(a->va, a->size, &access, 1)) != CUDA_SUCCESS) {
          std::printf("FAIL: mapping a VMM allocation: CUresult %d\n", static_cast<int>(r));
          ++g_failures;
        }
        *h = a;
        return cudaSuccess;
      },
      [](void* h) {
        auto* a = static_cast<VmmAllocation*>(h);
        CUresult r = CUDA_SUCCESS;
        if (a->va != 0) {
          api.unmap(a->va, a->size);
          api.address_free(a->va, a->size);
        }
        r = api.release(a->handle);
        delete a;
        return AsRuntimeError(r);
      });
}

// Every device-memory path of the runtime against the slice; host allocations are not charged.
void Paths() {
  Path(
      "cudaMalloc", [](size_t n, void** h) { return cudaMalloc(h, n); },
      [](void* h) { return cudaFree(h); });
  Path(
      "cudaMallocManaged", [](size_t n, void** h) { return cudaMallocManaged(h, n); },
      [](void* h) { return cudaFree(h); });
  Path(
      "cudaMallocPitch",
      [](size_t n, void** h) {
        size_t pitch = 0;
        return cudaMallocPitch(h, &pitch, 1 << 20, n >> 20);
      },
      [](void* h) { return cudaFree(h); });
  Path(
      "cudaMalloc3D",
      [](size_t n, void** h) {
        cudaPitchedPtr p{};
        cudaError_t e = cudaMalloc3D(&p, make_cudaExtent(1 << 20, n >> 24, 16));
        *h = p.ptr;
        return e;
      },
      [](void* h) { return cudaFree(h); });
  // cudaMallocAsync from the device's default pool and from an explicit pool, released to the
  // slice at the synchronization (release threshold 0).
  Path(
      "cudaMallocAsync",
      [](size_t n, void** h) {
        cudaError_t e = cudaMallocAsync(h, n, nullptr);
        return e == cudaSuccess ? cudaStreamSynchronize(nullptr) : e;
      },
      [](void* h) {
        cudaError_t e = cudaFreeAsync(h, nullptr);
        return e == cudaSuccess ? cudaStreamSynchronize(nullptr) : e;
      });
  cudaMemPool_t pool = nullptr;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  if (Ok(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate")) {
    Path(
        "cudaMallocFromPoolAsync",
        [pool](size_t n, void** h) {
          cudaError_t e = cudaMallocFromPoolAsync(h, n, pool, nullptr);
          return e == cudaSuccess ? cudaStreamSynchronize(nullptr) : e;
        },
        [](void* h) {
          cudaError_t e = cudaFreeAsync(h, nullptr);
          return e == cudaSuccess ? cudaStreamSynchronize(nullptr) : e;
        });
    Ok(cudaMemPoolDestroy(pool), "cudaMemPoolDestroy");
  }
  // Arrays of 4-byte texels, 16384 wide: n bytes are n / 64 KiB rows.
  Path(
      "cudaMallocArray",
      [](size_t n, void** h) {
        cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
        return cudaMallocArray(reinterpret_cast<cudaArray_t*>(h), &f, 16384, n >> 16);
      },
      [](void* h) { return cudaFreeArray(static_cast<cudaArray_t>(h)); });
  Path(
      "cudaMallocMipmappedArray",
      [](size_t n, void** h) {
        cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
        return cudaMallocMipmappedArray(reinterpret_cast<cudaMipmappedArray_t*>(h), &f,
                                        make_cudaExtent(16384, n >> 16, 0), 1);
      },
      [](void* h) { return cudaFreeMipmappedArray(static_cast<cudaMipmappedArray_t>(h)); });
  VmmPath();
  // Host memory is not device memory: not charged.
  const size_t before = FreeBytes();
  void* host = nullptr;
  if (Ok(cudaHostAlloc(&host, 64ull << 20, cudaHostAllocDefault), "cudaHostAlloc 64 MiB")) {
    Check(FreeBytes() == before, "cudaHostAlloc takes nothing from the slice");
    Ok(cudaFreeHost(host), "cudaFreeHost");
  }
  std::vector<char> buffer(1 << 20);
  if (Ok(cudaHostRegister(buffer.data(), buffer.size(), cudaHostRegisterDefault),
         "cudaHostRegister 1 MiB")) {
    Check(FreeBytes() == before, "cudaHostRegister takes nothing from the slice");
    Ok(cudaHostUnregister(buffer.data()), "cudaHostUnregister");
  }
}

// vLLM's start-up: free memory before and after a large allocation (its profiling run), then a
// share of what is "free" for the KV cache. Under a slice, every figure is the slice's.
void VllmStartup(size_t total) {
  size_t free0 = 0;
  size_t total0 = 0;
  if (!Ok(cudaMemGetInfo(&free0, &total0), "cudaMemGetInfo at start-up")) return;
  Check(total0 == total && free0 <= total, "start-up: the total is the slice's");
  void* weights = nullptr;
  const size_t weights_bytes = free0 / 2;
  if (!Ok(cudaMalloc(&weights, weights_bytes), "start-up: half of free for the weights")) return;
  size_t free1 = 0;
  size_t total1 = 0;
  Ok(cudaMemGetInfo(&free1, &total1), "cudaMemGetInfo after the weights");
  Check(free1 + weights_bytes <= free0 && free1 + weights_bytes + (2ull << 20) >= free0,
        "start-up: free fell by the weights (within 2 MiB)");
  // gpu_memory_utilization 0.9 of the total, minus what is in use: the KV cache.
  const size_t in_use = total1 - free1;
  const size_t budget = static_cast<size_t>(0.9 * static_cast<double>(total1));
  void* kv = nullptr;
  if (budget > in_use &&
      Ok(cudaMalloc(&kv, budget - in_use), "start-up: the KV cache (0.9 of the total)")) {
    size_t free2 = 0;
    Ok(cudaMemGetInfo(&free2, &total1), "cudaMemGetInfo after the KV cache");
    Check(free2 <= total1 / 10 + (2ull << 20), "start-up: a tenth of the slice is left");
    void* more = nullptr;
    Expect(cudaMalloc(&more, free2 + (64ull << 20)), cudaErrorMemoryAllocation,
           "start-up: more than is left");
    cudaGetLastError();
    Ok(cudaFree(kv), "cudaFree the KV cache");
  }
  Ok(cudaFree(weights), "cudaFree the weights");
}

// Under libvgpu: the slice's memory is all there is, and one allocation more is refused.
void Slice(size_t total) {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  Ok(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo in the slice");
  std::vector<void*> blocks;
  const size_t block = 64ull << 20;
  void* p = nullptr;
  size_t got = 0;
  while (got + block <= free_bytes && cudaMalloc(&p, block) == cudaSuccess) {
    blocks.push_back(p);
    got += block;
  }
  Check(got + block > free_bytes, "the slice's free memory can be allocated");
  Expect(cudaMalloc(&p, free_bytes - got + (1 << 20)), cudaErrorMemoryAllocation,
         "an allocation past the slice");
  Expect(cudaGetLastError(), cudaErrorMemoryAllocation, "cudaGetLastError after it");
  size_t free_after = 0;
  Ok(cudaMemGetInfo(&free_after, &total_bytes), "cudaMemGetInfo when full");
  Check(total_bytes == total && free_after <= free_bytes - got,
        "cudaMemGetInfo shows the slice, nearly full");
  for (void* b : blocks) Ok(cudaFree(b), "cudaFree");
  Ok(cudaMemGetInfo(&free_after, &total_bytes), "cudaMemGetInfo after freeing");
  Check(free_after == free_bytes, "freed memory returns to the slice");
}

}  // namespace

int main(int argc, char** argv) {
  size_t total = 0;
  bool slice = false;
  int devices = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--total") == 0 && i + 1 < argc) {
      total = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--devices") == 0 && i + 1 < argc) {
      devices = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--slice") == 0) {
      slice = true;
    } else {
      std::fprintf(stderr,
                   "cudart_program: unknown argument '%s'\n"
                   "usage: cudart_program --total BYTES [--slice] [--devices N]\n",
                   argv[i]);
      return 2;
    }
  }
  if (total == 0) {
    std::fprintf(stderr, "cudart_program: --total BYTES is required\n");
    return 2;
  }
  Devices(devices, total);
  Memory(total);
  Launches();
  Graphs();
  if (slice) {
    Paths();
    VllmStartup(total);
    Slice(total);
  }
  std::printf("%d failure(s)\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
