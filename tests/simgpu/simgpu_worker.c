/* A helper process for the simulated GPU's multi-process tests, written in C against cuda.h and
 * linked with -lcuda, as any driver API program would be.
 *
 *   simgpu_worker info                 prints "count N" and "name I NAME" per device
 *   simgpu_worker preinit              prints the results of calls made before cuInit
 *   simgpu_worker alloc BYTES [DEV]    allocates, prints "ready PID", frees when stdin closes
 *   simgpu_worker churn                allocates and frees 1 MiB in a loop, prints "ready PID"
 *   simgpu_worker launch NS MS         launches sim_sleep_ns kernels of NS ns back to back (each
 *                                      followed by a stream synchronize) for MS ms, then prints
 *                                      "done KERNELS ELAPSED_MS"
 *   simgpu_worker limits               prints "count N", "device TOTAL_BYTES SMS NAME" of device
 *                                      0, "alloc_all OK|ERR" (TOTAL bytes), "alloc_more OK|ERR"
 *                                      (TOTAL + 1 bytes), then "ready PID"; holds its context
 *                                      until stdin closes
 * Exit status: 0, or 1 with a message on stderr if a call fails.
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call)                                                    \
  do {                                                                 \
    CUresult rc_ = (call);                                             \
    if (rc_ != CUDA_SUCCESS) {                                         \
      const char* name_ = "?";                                         \
      cuGetErrorName(rc_, &name_);                                     \
      fprintf(stderr, "simgpu_worker: %s failed: %s\n", #call, name_); \
      return 1;                                                        \
    }                                                                  \
  } while (0)

static double NowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int UseDevice(int ordinal) {
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, ordinal));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  return 0;
}

static void WaitForStdinToClose(void) {
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
}

static int Info(void) {
  int count = 0;
  CHECK(cuInit(0));
  CHECK(cuDeviceGetCount(&count));
  printf("count %d\n", count);
  for (int i = 0; i < count; ++i) {
    char name[128];
    CHECK(cuDeviceGetName(name, sizeof name, i));
    printf("name %d %s\n", i, name);
  }
  return 0;
}

static int PreInit(void) {
  int count = -1;
  int version = 0;
  CUresult a = cuDeviceGetCount(&count);
  CUresult b = cuDriverGetVersion(&version);
  printf("count_rc %d version_rc %d version %d\n", (int)a, (int)b, version);
  return 0;
}

static int Alloc(size_t bytes, int ordinal) {
  CUdeviceptr p;
  if (UseDevice(ordinal) != 0) return 1;
  CHECK(cuMemAlloc(&p, bytes));
  CHECK(cuMemsetD8(p, 0x5a, bytes < 4096 ? bytes : 4096));
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  WaitForStdinToClose();
  CHECK(cuMemFree(p));
  return 0;
}

static int Churn(void) {
  if (UseDevice(0) != 0) return 1;
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  for (;;) {
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, 1 << 20));
    CHECK(cuMemFree(p));
  }
}

static int Launch(uint64_t kernel_ns, double run_ms) {
  CUmodule module;
  CUfunction kernel;
  CUstream stream;
  if (UseDevice(0) != 0) return 1;
  CHECK(cuModuleLoadData(&module, "any image"));
  CHECK(cuModuleGetFunction(&kernel, module, "sim_sleep_ns"));
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  double start = NowMs();
  long kernels = 0;
  while (NowMs() - start < run_ms) {
    void* args[] = {&kernel_ns};
    CHECK(cuLaunchKernel(kernel, 1, 1, 1, 128, 1, 1, 0, stream, args, NULL));
    CHECK(cuStreamSynchronize(stream));
    ++kernels;
  }
  printf("done %ld %.1f\n", kernels, NowMs() - start);
  CHECK(cuStreamDestroy(stream));
  return 0;
}

static int Limits(void) {
  int count = 0;
  size_t total = 0;
  int sms = 0;
  char name[128];
  CUdevice dev;
  CUdeviceptr p;
  if (UseDevice(0) != 0) return 1;
  CHECK(cuDeviceGetCount(&count));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDeviceTotalMem(&total, dev));
  CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CHECK(cuDeviceGetName(name, sizeof name, dev));
  printf("count %d\n", count);
  printf("device %zu %d %s\n", total, sms, name);
  CUresult all = cuMemAlloc(&p, total);
  printf("alloc_all %s\n", all == CUDA_SUCCESS ? "OK" : "ERR");
  if (all == CUDA_SUCCESS) CHECK(cuMemFree(p));
  CUresult more = cuMemAlloc(&p, total + 1);
  printf("alloc_more %s\n", more == CUDA_SUCCESS ? "OK" : "ERR");
  if (more == CUDA_SUCCESS) CHECK(cuMemFree(p));
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  WaitForStdinToClose();
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 2 && strcmp(argv[1], "info") == 0) return Info();
  if (argc >= 2 && strcmp(argv[1], "preinit") == 0) return PreInit();
  if (argc >= 3 && strcmp(argv[1], "alloc") == 0) {
    return Alloc(strtoull(argv[2], NULL, 10), argc >= 4 ? atoi(argv[3]) : 0);
  }
  if (argc >= 2 && strcmp(argv[1], "churn") == 0) return Churn();
  if (argc >= 2 && strcmp(argv[1], "limits") == 0) return Limits();
  if (argc >= 4 && strcmp(argv[1], "launch") == 0) {
    return Launch(strtoull(argv[2], NULL, 10), atof(argv[3]));
  }
  fprintf(stderr, "usage: simgpu_worker info|preinit|alloc BYTES [DEV]|churn|launch NS MS\n");
  return 2;
}
