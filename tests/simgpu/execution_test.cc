// Kernels, streams, events and graphs on the simulated device timeline: kernels take the time
// the convention gives them, run one at a time, and synchronization waits for them in real time.
#include <cuda.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "sim_test_util.h"
#include "support/wait_for.h"

namespace vgpu::simgpu::testing {
namespace {

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call
#define EXPECT_CU(call) EXPECT_EQ((call), CUDA_SUCCESS) << #call

constexpr uint64_t kMsNs = 1'000'000;

class SimgpuExecution : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_CU(cuModuleLoadData(&module_, "not a real image"));
    ASSERT_CU(cuModuleGetFunction(&sleep_, module_, "sim_sleep_ns"));
    ASSERT_CU(cuModuleGetFunction(&plain_, module_, "_Z6saxpyifPfS_"));
  }
  void TearDown() override { EXPECT_CU(cuModuleUnload(module_)); }

  // Launches a sim_sleep_ns kernel of `ns` on `s`.
  CUresult Sleep(uint64_t ns, CUstream s) {
    void* args[] = {&ns};
    return cuLaunchKernel(sleep_, 1, 1, 1, 64, 1, 1, 0, s, args, nullptr);
  }

  ScopedContext ctx_;
  CUmodule module_ = nullptr;
  CUfunction sleep_ = nullptr;
  CUfunction plain_ = nullptr;
};

TEST_F(SimgpuExecution, EventsMeasureTheKernelDuration) {
  CUevent start = nullptr, stop = nullptr;
  ASSERT_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
  ASSERT_CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  CUstream s = nullptr;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  double t0 = NowMs();
  ASSERT_CU(cuEventRecord(start, s));
  ASSERT_CU(Sleep(30 * kMsNs, s));
  ASSERT_CU(cuEventRecord(stop, s));
  EXPECT_LT(NowMs() - t0, 20.0) << "launches must not block";
  EXPECT_EQ(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(cuEventQuery(stop), CUDA_ERROR_NOT_READY);
  float ms = 0;
  EXPECT_EQ(cuEventElapsedTime(&ms, start, stop), CUDA_ERROR_NOT_READY);
  ASSERT_CU(cuEventSynchronize(stop));
  EXPECT_GE(NowMs() - t0, 30.0);
  EXPECT_CU(cuStreamQuery(s));
  ASSERT_CU(cuEventElapsedTime(&ms, start, stop));
  EXPECT_NEAR(ms, 30.0, 2.0);
  CUevent no_timing = nullptr;
  ASSERT_CU(cuEventCreate(&no_timing, CU_EVENT_DISABLE_TIMING));
  ASSERT_CU(cuEventRecord(no_timing, s));
  EXPECT_EQ(cuEventElapsedTime(&ms, start, no_timing), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_CU(cuEventDestroy(no_timing));
  ASSERT_CU(cuEventDestroy(start));
  ASSERT_CU(cuEventDestroy(stop));
  ASSERT_CU(cuStreamDestroy(s));
}

TEST_F(SimgpuExecution, TheDeviceRunsOneKernelAtATime) {
  CUstream a = nullptr, b = nullptr;
  ASSERT_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  ASSERT_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  double t0 = NowMs();
  ASSERT_CU(Sleep(25 * kMsNs, a));
  ASSERT_CU(Sleep(25 * kMsNs, b));
  ASSERT_CU(cuStreamSynchronize(a));
  double first = NowMs() - t0;
  EXPECT_EQ(cuStreamQuery(b), CUDA_ERROR_NOT_READY);
  ASSERT_CU(cuCtxSynchronize());
  double both = NowMs() - t0;
  EXPECT_GE(first, 25.0);
  EXPECT_LT(first, 45.0);
  EXPECT_GE(both, 50.0);
  ASSERT_CU(cuStreamDestroy(a));
  ASSERT_CU(cuStreamDestroy(b));
}

TEST_F(SimgpuExecution, StreamOrderingFollowsEventsAndTheLegacyStream) {
  CUstream a = nullptr, b = nullptr;
  ASSERT_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  ASSERT_CU(cuStreamCreate(&b, CU_STREAM_DEFAULT));  // blocking: ordered with the NULL stream
  CUevent e = nullptr;
  ASSERT_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  ASSERT_CU(Sleep(20 * kMsNs, a));
  ASSERT_CU(cuEventRecord(e, a));
  ASSERT_CU(cuStreamWaitEvent(b, e, 0));
  ASSERT_CU(Sleep(1 * kMsNs, b));
  double t0 = NowMs();
  ASSERT_CU(cuStreamSynchronize(b));
  EXPECT_GE(NowMs() - t0, 15.0);  // b's kernel waited for a's

  // Work on the NULL (legacy) stream waits for blocking streams, and they wait for it.
  ASSERT_CU(Sleep(20 * kMsNs, b));
  ASSERT_CU(Sleep(1 * kMsNs, nullptr));
  t0 = NowMs();
  ASSERT_CU(cuStreamSynchronize(nullptr));
  EXPECT_GE(NowMs() - t0, 15.0);
  // A synchronous copy waits for the legacy stream.
  CUdeviceptr d = 0;
  ASSERT_CU(cuMemAlloc(&d, 64));
  ASSERT_CU(Sleep(20 * kMsNs, nullptr));
  t0 = NowMs();
  char host[64];
  ASSERT_CU(cuMemcpyDtoH(host, d, 64));
  EXPECT_GE(NowMs() - t0, 15.0);
  ASSERT_CU(cuMemFree(d));
  ASSERT_CU(cuEventDestroy(e));
  ASSERT_CU(cuStreamDestroy(a));
  ASSERT_CU(cuStreamDestroy(b));
}

// The host link of the default device (h100: 55 GB/s each way, 70% kept while the other
// direction is busy): copies take their time on the timeline, the directions are coupled.
TEST_F(SimgpuExecution, HostCopiesTakeTheLinkTimeAndDirectionsAreCoupled) {
  constexpr size_t kBytes = 11'000'000;  // 0.2 ms at 55 GB/s
  CUdeviceptr a = 0, b = 0;
  ASSERT_CU(cuMemAlloc(&a, kBytes));
  ASSERT_CU(cuMemAlloc(&b, kBytes));
  std::vector<char> up(kBytes, 1), down(kBytes, 0);
  CUstream k = nullptr, s1 = nullptr, s2 = nullptr;
  for (CUstream* s : {&k, &s1, &s2}) ASSERT_CU(cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
  CUevent gate = nullptr, t1 = nullptr, e1 = nullptr, t2 = nullptr, e2 = nullptr;
  for (CUevent* e : {&gate, &t1, &e1, &t2, &e2}) ASSERT_CU(cuEventCreate(e, CU_EVENT_DEFAULT));
  // Both streams become ready at the end of one kernel, so the two copies start together.
  ASSERT_CU(Sleep(50 * kMsNs, k));
  ASSERT_CU(cuEventRecord(gate, k));
  ASSERT_CU(cuStreamWaitEvent(s1, gate, 0));
  ASSERT_CU(cuStreamWaitEvent(s2, gate, 0));
  ASSERT_CU(cuEventRecord(t1, s1));
  ASSERT_CU(cuMemcpyHtoDAsync(a, up.data(), kBytes, s1));
  ASSERT_CU(cuEventRecord(e1, s1));
  ASSERT_CU(cuEventRecord(t2, s2));
  ASSERT_CU(cuMemcpyDtoHAsync(down.data(), b, kBytes, s2));
  ASSERT_CU(cuEventRecord(e2, s2));
  ASSERT_CU(cuCtxSynchronize());
  float h2d = 0, d2h = 0;
  ASSERT_CU(cuEventElapsedTime(&h2d, t1, e1));
  ASSERT_CU(cuEventElapsedTime(&d2h, t2, e2));
  EXPECT_NEAR(h2d, 0.2, 0.01);
  // 0.2 ms beside the H2D copy at 38.5 GB/s (7.7 MB), the remaining 3.3 MB at 55 GB/s.
  EXPECT_NEAR(d2h, 0.26, 0.01);
  // A synchronous copy returns when it has crossed the link: 10 x 11 MB = 2 ms.
  double t0 = NowMs();
  for (int i = 0; i < 10; ++i) ASSERT_CU(cuMemcpyHtoD(a, up.data(), kBytes));
  EXPECT_GE(NowMs() - t0, 2.0);
  for (CUevent e : {gate, t1, e1, t2, e2}) ASSERT_CU(cuEventDestroy(e));
  for (CUstream s : {k, s1, s2}) ASSERT_CU(cuStreamDestroy(s));
  ASSERT_CU(cuMemFree(a));
  ASSERT_CU(cuMemFree(b));
}

TEST_F(SimgpuExecution, OtherKernelsTakeTheDefaultTimePerWave) {
  CUevent start = nullptr, stop = nullptr;
  ASSERT_CU(cuEventCreate(&start, 0));
  ASSERT_CU(cuEventCreate(&stop, 0));
  ASSERT_CU(cuStreamSynchronize(nullptr));
  ASSERT_CU(cuEventRecord(start, nullptr));
  // 132 SMs x 2048 threads = one wave; 1000 waves of the default 10 us = 10 ms.
  ASSERT_CU(cuLaunchKernel(plain_, 132 * 2 * 1000, 1, 1, 1024, 1, 1, 0, nullptr, nullptr, nullptr));
  ASSERT_CU(cuEventRecord(stop, nullptr));
  ASSERT_CU(cuEventSynchronize(stop));
  float ms = 0;
  ASSERT_CU(cuEventElapsedTime(&ms, start, stop));
  EXPECT_NEAR(ms, 10.0, 1.0);
  ASSERT_CU(cuEventDestroy(start));
  ASSERT_CU(cuEventDestroy(stop));
}

TEST_F(SimgpuExecution, LaunchVariantsAndValidation) {
  CUlaunchConfig cfg{};
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 128;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = nullptr;
  uint64_t ns = 1 * kMsNs;
  void* args[] = {&ns};
  ASSERT_CU(cuLaunchKernelEx(&cfg, sleep_, args, nullptr));
  ASSERT_CU(cuLaunchCooperativeKernel(sleep_, 2, 1, 1, 32, 1, 1, 0, nullptr, args));
  // The parameter buffer form of `extra`.
  size_t size = sizeof(ns);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &ns, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  ASSERT_CU(cuLaunchKernel(sleep_, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, extra));
  EXPECT_EQ(cuLaunchKernel(sleep_, 1, 1, 1, 2048, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(sleep_, 0, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(sleep_, 1, 1, 1, 32, 1, 1, 100000, nullptr, args, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuFuncSetAttribute(sleep_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000));
  ASSERT_CU(cuLaunchKernel(sleep_, 1, 1, 1, 32, 1, 1, 100000, nullptr, args, nullptr));
  const char* name = nullptr;
  ASSERT_CU(cuFuncGetName(&name, sleep_));
  EXPECT_STREQ(name, "sim_sleep_ns");

  // Libraries and kernels (the CUDA 12 module API).
  CUlibrary lib = nullptr;
  ASSERT_CU(cuLibraryLoadData(&lib, "any", nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel k = nullptr;
  ASSERT_CU(cuLibraryGetKernel(&k, lib, "my_sim_sleep_ns_kernel"));
  ASSERT_CU(
      cuLaunchKernel(reinterpret_cast<CUfunction>(k), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  CUfunction f = nullptr;
  ASSERT_CU(cuKernelGetFunction(&f, k));
  ASSERT_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  ASSERT_CU(cuLibraryUnload(lib));
  EXPECT_EQ(cuModuleLoad(&module_, "/nonexistent/kernels.cubin"), CUDA_ERROR_FILE_NOT_FOUND);
}

// Cluster occupancy (what cuBLAS asks on an SM 9.0 device before it creates a handle): 8 blocks
// per cluster, 16 when the kernel allows non-portable sizes, the required size when it has one;
// the active clusters are the device's blocks at this occupancy over the cluster size.
TEST_F(SimgpuExecution, ClusterOccupancyFollowsTheKernelsClusterAttributes) {
  CUlaunchConfig cfg{};
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 128;
  cfg.blockDimY = cfg.blockDimZ = 1;
  int size = -1;
  ASSERT_CU(cuOccupancyMaxPotentialClusterSize(&size, sleep_, &cfg));
  EXPECT_EQ(size, 8);
  ASSERT_CU(cuFuncSetAttribute(sleep_, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
  ASSERT_CU(cuOccupancyMaxPotentialClusterSize(&size, sleep_, &cfg));
  EXPECT_EQ(size, 16);
  int clusters = -1;
  EXPECT_EQ(cuOccupancyMaxActiveClusters(&clusters, sleep_, &cfg),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);  // no size given, none required
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = 2;
  attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int sms = 0, per_sm = 0;
  ASSERT_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  ASSERT_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sleep_, 128, 0));
  ASSERT_CU(cuOccupancyMaxActiveClusters(&clusters, sleep_, &cfg));
  EXPECT_GT(per_sm, 0);
  EXPECT_EQ(clusters, sms * per_sm / 2);
  attr.value.clusterDim.x = 32;
  EXPECT_EQ(cuOccupancyMaxActiveClusters(&clusters, sleep_, &cfg),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);  // above 16
  // A required size wins, and a configuration must match it.
  ASSERT_CU(cuFuncSetAttribute(sleep_, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 4));
  ASSERT_CU(cuOccupancyMaxPotentialClusterSize(&size, sleep_, &cfg));
  EXPECT_EQ(size, 4);
  attr.value.clusterDim.x = 2;
  EXPECT_EQ(cuOccupancyMaxActiveClusters(&clusters, sleep_, &cfg), CUDA_ERROR_INVALID_CLUSTER_SIZE);
  cfg.numAttrs = 0;
  ASSERT_CU(cuOccupancyMaxActiveClusters(&clusters, sleep_, &cfg));
  EXPECT_EQ(clusters, sms * per_sm / 4);
  EXPECT_EQ(cuOccupancyMaxActiveClusters(&clusters, sleep_, nullptr), CUDA_ERROR_INVALID_VALUE);
}

// Context limits: the settable ones round-trip; CU_LIMIT_CIG_ENABLED (what cuBLAS reads before a
// GEMM) is 0, no context being a CIG one, and cannot be set; unknown limits are refused.
TEST_F(SimgpuExecution, ContextLimitsRoundTripAndNoContextIsCig) {
  ASSERT_CU(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
  size_t value = 0;
  ASSERT_CU(cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE));
  EXPECT_EQ(value, 4096u);
  value = 7;
  ASSERT_CU(cuCtxGetLimit(&value, CU_LIMIT_CIG_ENABLED));
  EXPECT_EQ(value, 0u);
  EXPECT_EQ(cuCtxSetLimit(CU_LIMIT_CIG_ENABLED, 1), CUDA_ERROR_UNSUPPORTED_LIMIT);
  EXPECT_EQ(cuCtxGetLimit(&value, CU_LIMIT_MAX), CUDA_ERROR_UNSUPPORTED_LIMIT);
  EXPECT_EQ(cuCtxGetLimit(nullptr, CU_LIMIT_STACK_SIZE), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(SimgpuExecution, GraphsLaunchAndTakeTheirKernelsTime) {
  CUgraph g = nullptr;
  ASSERT_CU(cuGraphCreate(&g, 0));
  uint64_t ns = 10 * kMsNs;
  void* args[] = {&ns};
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = sleep_;
  p.gridDimX = p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = 32;
  p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = args;
  CUgraphNode prev = nullptr;
  for (int i = 0; i < 3; ++i) {
    CUgraphNode n = nullptr;
    ASSERT_CU(cuGraphAddKernelNode(&n, g, prev ? &prev : nullptr, prev ? 1 : 0, &p));
    prev = n;
  }
  size_t count = 0;
  ASSERT_CU(cuGraphGetNodes(g, nullptr, &count));
  EXPECT_EQ(count, 3u);
  CUgraphExec exec = nullptr;
  ASSERT_CU(cuGraphInstantiateWithFlags(&exec, g, 0));
  CUstream s = nullptr;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent start = nullptr, stop = nullptr;
  ASSERT_CU(cuEventCreate(&start, 0));
  ASSERT_CU(cuEventCreate(&stop, 0));
  ASSERT_CU(cuEventRecord(start, s));
  ASSERT_CU(cuGraphLaunch(exec, s));
  ASSERT_CU(cuGraphLaunch(exec, s));
  ASSERT_CU(cuEventRecord(stop, s));
  ASSERT_CU(cuEventSynchronize(stop));
  float ms = 0;
  ASSERT_CU(cuEventElapsedTime(&ms, start, stop));
  EXPECT_NEAR(ms, 60.0, 3.0);
  ASSERT_CU(cuGraphExecDestroy(exec));
  ASSERT_CU(cuGraphDestroy(g));

  // Stream capture records work into a graph instead of running it.
  CUdeviceptr d = 0;
  ASSERT_CU(cuMemAlloc(&d, 256));
  ASSERT_CU(cuMemsetD8(d, 0, 256));
  ASSERT_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureStatus status;
  ASSERT_CU(cuStreamIsCapturing(s, &status));
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  ASSERT_CU(Sleep(20 * kMsNs, s));
  ASSERT_CU(cuMemsetD8Async(d, 0x7f, 256, s));
  CUgraph captured = nullptr;
  ASSERT_CU(cuStreamEndCapture(s, &captured));
  unsigned char byte = 1;
  ASSERT_CU(cuMemcpyDtoH(&byte, d, 1));
  EXPECT_EQ(byte, 0);  // nothing ran yet
  ASSERT_CU(cuGraphGetNodes(captured, nullptr, &count));
  EXPECT_EQ(count, 2u);
  ASSERT_CU(cuGraphInstantiate(&exec, captured, 0));
  double t0 = NowMs();
  ASSERT_CU(cuGraphLaunch(exec, s));
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_GE(NowMs() - t0, 19.0);
  ASSERT_CU(cuMemcpyDtoH(&byte, d, 1));
  EXPECT_EQ(byte, 0x7f);
  ASSERT_CU(cuGraphExecDestroy(exec));
  ASSERT_CU(cuGraphDestroy(captured));
  ASSERT_CU(cuMemFree(d));
  ASSERT_CU(cuEventDestroy(start));
  ASSERT_CU(cuEventDestroy(stop));
  ASSERT_CU(cuStreamDestroy(s));
}

TEST_F(SimgpuExecution, HostFunctionsRunWhenTheStreamReachesThem) {
  static std::atomic<double> ran_at{0};
  CUstream s = nullptr;
  ASSERT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  double t0 = NowMs();
  ASSERT_CU(Sleep(20 * kMsNs, s));
  ASSERT_CU(cuLaunchHostFunc(
      s, [](void*) { ran_at = NowMs(); }, nullptr));
  vgpu::testing::WaitFor([] { return ran_at.load() != 0; }, std::chrono::milliseconds(200),
                         std::chrono::milliseconds(1));
  ASSERT_GT(ran_at.load(), 0);
  EXPECT_GE(ran_at.load() - t0, 19.0);
  ASSERT_CU(cuStreamDestroy(s));
}

TEST_F(SimgpuExecution, PerThreadDefaultStreamIsSeparateFromTheLegacyOne) {
  using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, CUstream, void**, void**);
  using SyncFn = CUresult (*)(CUstream);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult st;
  const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  ASSERT_CU(cuGetProcAddress("cuLaunchKernel", &fn, 13000, pt, &st));
  auto launch_pt = reinterpret_cast<LaunchFn>(fn);
  ASSERT_CU(cuGetProcAddress("cuStreamQuery", &fn, 13000, pt, &st));
  auto query_pt = reinterpret_cast<SyncFn>(fn);
  ASSERT_CU(cuStreamSynchronize(nullptr));
  uint64_t ns = 30 * kMsNs;
  void* args[] = {&ns};
  ASSERT_CU(launch_pt(sleep_, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  EXPECT_EQ(query_pt(nullptr), CUDA_ERROR_NOT_READY);  // the per-thread stream is busy
  EXPECT_EQ(cuStreamQuery(CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_READY);
  ASSERT_CU(cuCtxSynchronize());
}

}  // namespace
}  // namespace vgpu::simgpu::testing
