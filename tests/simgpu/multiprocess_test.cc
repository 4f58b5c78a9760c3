// Several processes on one simulated GPU: shared memory accounting, NVML's view of all of them,
// recovery from processes killed with SIGKILL, and the shared kernel timeline.
#include <cuda.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sim_test_util.h"
#include "support/wait_for.h"

namespace vgpu::simgpu::testing {
namespace {

#define ASSERT_NVML(call) ASSERT_EQ((call), NVML_SUCCESS) << #call

class SimgpuMultiProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NVML(nvmlInit_v2());
    ASSERT_NVML(nvmlDeviceGetHandleByIndex_v2(0, &dev_));
  }
  void TearDown() override { EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS); }

  std::map<unsigned, unsigned long long> Processes() {
    std::map<unsigned, unsigned long long> out;
    nvmlProcessInfo_t infos[64];
    unsigned count = 64;
    EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(dev_, &count, infos), NVML_SUCCESS);
    for (unsigned i = 0; i < count; ++i) out[infos[i].pid] = infos[i].usedGpuMemory;
    return out;
  }
  unsigned long long NvmlUsed() {
    nvmlMemory_t m{};
    EXPECT_EQ(nvmlDeviceGetMemoryInfo(dev_, &m), NVML_SUCCESS);
    return m.used;
  }

  nvmlDevice_t dev_ = nullptr;
};

pid_t ReadyPid(Worker& w) {
  std::string line = w.ReadLine();
  EXPECT_EQ(line.rfind("ready ", 0), 0u) << "worker said: '" << line << "'";
  return line.size() > 6 ? static_cast<pid_t>(std::atoi(line.c_str() + 6)) : -1;
}

TEST_F(SimgpuMultiProcess, NvmlSeesTheMemoryOfEveryProcess) {
  uint64_t base = UsedBytes();
  Worker a({"alloc", std::to_string(100 * kMiB)});
  Worker b({"alloc", std::to_string(200 * kMiB)});
  pid_t pa = ReadyPid(a);
  pid_t pb = ReadyPid(b);
  ASSERT_EQ(pa, a.pid());
  ASSERT_EQ(pb, b.pid());
  auto procs = Processes();
  EXPECT_EQ(procs[static_cast<unsigned>(pa)], 100 * kMiB);
  EXPECT_EQ(procs[static_cast<unsigned>(pb)], 200 * kMiB);
  EXPECT_EQ(NvmlUsed(), base + 300 * kMiB);
  EXPECT_EQ(UsedBytes(), base + 300 * kMiB);  // cuMemGetInfo counts other processes too
  char name[64] = {};
  ASSERT_NVML(nvmlSystemGetProcessName(static_cast<unsigned>(pa), name, sizeof(name)));
  EXPECT_STREQ(name, "simgpu_worker");

  // The v1 and v2 layouts list the same.
  nvmlProcessInfo_v1_t v1[8];
  unsigned n = 1;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses(dev_, &n, v1), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 2u);
  n = 8;
  ASSERT_NVML(nvmlDeviceGetComputeRunningProcesses(dev_, &n, v1));
  EXPECT_EQ(n, 2u);
  nvmlProcessInfo_v2_t v2[8];
  n = 8;
  ASSERT_NVML(nvmlDeviceGetComputeRunningProcesses_v2(dev_, &n, v2));
  EXPECT_EQ(v2[0].gpuInstanceId, 0xFFFFFFFFu);

  a.CloseStdin();
  EXPECT_EQ(a.Wait(), 0);
  EXPECT_EQ(NvmlUsed(), base + 200 * kMiB);
  b.CloseStdin();
  EXPECT_EQ(b.Wait(), 0);
  EXPECT_EQ(NvmlUsed(), base);
  EXPECT_EQ(Processes().count(static_cast<unsigned>(pb)), 0u);
}

TEST_F(SimgpuMultiProcess, AllProcessesTogetherCannotExceedTheDevice) {
  // Device 1 has 1 GiB: a second process cannot take what the first holds.
  Worker a({"alloc", std::to_string(800 * kMiB), "1"});
  ReadyPid(a);
  int code = 0;
  std::string out = RunWorker({"alloc", std::to_string(300 * kMiB), "1"}, {}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(out, "");
  a.CloseStdin();
  EXPECT_EQ(a.Wait(), 0);
  Worker b({"alloc", std::to_string(300 * kMiB), "1"});
  ReadyPid(b);
}

TEST_F(SimgpuMultiProcess, KilledProcessesGiveTheirMemoryBackWithinASecond) {
  uint64_t base = UsedBytes();
  Worker w({"alloc", std::to_string(500 * kMiB)});
  pid_t pid = ReadyPid(w);
  EXPECT_EQ(NvmlUsed(), base + 500 * kMiB);
  w.Kill(SIGKILL);
  EXPECT_EQ(w.Wait(), 128 + SIGKILL);
  double t0 = NowMs();
  vgpu::testing::WaitFor([&] { return NvmlUsed() == base; }, std::chrono::milliseconds(1000),
                         std::chrono::milliseconds(10));
  EXPECT_EQ(NvmlUsed(), base);
  EXPECT_LT(NowMs() - t0, 1000.0);
  EXPECT_EQ(Processes().count(static_cast<unsigned>(pid)), 0u);
}

TEST_F(SimgpuMultiProcess, SigkillAtRandomPointsNeverWedgesTheDevice) {
  uint64_t base = UsedBytes();
  std::mt19937 rng(42);
  ScopedContext ctx;
  for (int round = 0; round < 20; ++round) {
    Worker churn({"churn"});
    ReadyPid(churn);
    usleep(std::uniform_int_distribution<int>(0, 20000)(rng));  // mid-allocation, lock or not
    churn.Kill(SIGKILL);
    ASSERT_EQ(churn.Wait(), 128 + SIGKILL);
    // The survivor can still allocate at once, and the dead process's memory comes back.
    double t0 = NowMs();
    CUdeviceptr p = 0;
    ASSERT_EQ(cuMemAlloc(&p, kMiB), CUDA_SUCCESS);
    ASSERT_EQ(cuMemFree(p), CUDA_SUCCESS);
    EXPECT_LT(NowMs() - t0, 500.0);
    // Until a second after t0.
    const auto left = std::chrono::milliseconds(static_cast<int64_t>(1000 - (NowMs() - t0)));
    vgpu::testing::WaitFor([&] { return UsedBytes() == base; }, left, std::chrono::milliseconds(5));
    ASSERT_EQ(UsedBytes(), base) << "round " << round;
  }
}

TEST_F(SimgpuMultiProcess, TwoBusyProcessesShareTheDeviceHalfAndHalf) {
  ScopedContext ctx;
  // Each worker runs 10 ms kernels back to back for 1.5 s.
  Worker a({"launch", "10000000", "1500"});
  Worker b({"launch", "10000000", "1500"});
  pid_t pa = ReadyPid(a);
  pid_t pb = ReadyPid(b);
  usleep(1200 * 1000);
  nvmlUtilization_t util{};
  ASSERT_NVML(nvmlDeviceGetUtilizationRates(dev_, &util));
  EXPECT_GE(util.gpu, 95u);
  nvmlProcessUtilizationSample_t samples[8];
  unsigned n = 0;
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(dev_, nullptr, &n, 0), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 2u);
  n = 8;
  ASSERT_NVML(nvmlDeviceGetProcessUtilization(dev_, samples, &n, 0));
  std::map<unsigned, unsigned> sm;
  for (unsigned i = 0; i < n; ++i) sm[samples[i].pid] = samples[i].smUtil;
  EXPECT_NEAR(sm[static_cast<unsigned>(pa)], 50, 12);
  EXPECT_NEAR(sm[static_cast<unsigned>(pb)], 50, 12);
  unsigned temp = 0, power = 0;
  ASSERT_NVML(nvmlDeviceGetTemperature(dev_, NVML_TEMPERATURE_GPU, &temp));
  ASSERT_NVML(nvmlDeviceGetPowerUsage(dev_, &power));
  EXPECT_GT(temp, 60u);
  EXPECT_GT(power, 500000u);

  long ka = 0, kb = 0;
  std::istringstream(a.ReadLine().substr(5)) >> ka;
  std::istringstream(b.ReadLine().substr(5)) >> kb;
  EXPECT_EQ(a.Wait(), 0);
  EXPECT_EQ(b.Wait(), 0);
  // 1.5 s of 10 ms kernels shared by two: about 75 each.
  EXPECT_NEAR(ka, 75, 15);
  EXPECT_NEAR(kb, 75, 15);
  EXPECT_LE(ka + kb, 155);

  // Idle again: utilization falls back.
  usleep(1100 * 1000);
  ASSERT_NVML(nvmlDeviceGetUtilizationRates(dev_, &util));
  EXPECT_LE(util.gpu, 5u);
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(dev_, samples, &n, 0), NVML_ERROR_NOT_FOUND);
}

TEST_F(SimgpuMultiProcess, AKernelWaitsForAnotherProcessesKernel) {
  ScopedContext ctx;
  Worker busy({"launch", "200000000", "150"});  // one 200 ms kernel
  ReadyPid(busy);
  usleep(20000);
  CUmodule m = nullptr;
  CUfunction f = nullptr;
  ASSERT_EQ(cuModuleLoadData(&m, "x"), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&f, m, "sim_sleep_ns"), CUDA_SUCCESS);
  uint64_t ns = 10'000'000;
  void* args[] = {&ns};
  double t0 = NowMs();
  ASSERT_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  double waited = NowMs() - t0;
  EXPECT_GE(waited, 150.0);  // the device was busy with the other process's kernel
  EXPECT_LT(waited, 260.0);
  EXPECT_EQ(busy.Wait(), 0);
  ASSERT_EQ(cuModuleUnload(m), CUDA_SUCCESS);
}

TEST(SimgpuProcesses, VisibleDevicesAndCallsBeforeInit) {
  std::string out = RunWorker({"info"}, {"CUDA_VISIBLE_DEVICES=1"});
  EXPECT_EQ(out, "count 1\nname 0 vgpu simulated small\n");
  CUuuid uuid{};
  ASSERT_EQ(cuDeviceGetUuid(&uuid, 0), CUDA_SUCCESS);
  char prefix[32];
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  std::snprintf(prefix, sizeof(prefix), "GPU-%02x%02x%02x", b[0], b[1], b[2]);
  out = RunWorker({"info"}, {std::string("CUDA_VISIBLE_DEVICES=") + prefix});
  EXPECT_EQ(out, "count 1\nname 0 vgpu simulated H100 (8 GiB)\n");
  out = RunWorker({"info"}, {"CUDA_VISIBLE_DEVICES=1,0"});
  EXPECT_EQ(out, "count 2\nname 0 vgpu simulated small\nname 1 vgpu simulated H100 (8 GiB)\n");
  out = RunWorker({"info"}, {"CUDA_VISIBLE_DEVICES=7"});
  int code = 0;
  out = RunWorker({"info"}, {"CUDA_VISIBLE_DEVICES="}, &code);
  EXPECT_EQ(code, 1);  // no devices: cuInit fails
  out = RunWorker({"preinit"});
  EXPECT_EQ(out, "count_rc 3 version_rc 0 version 13000\n");  // NOT_INITIALIZED before cuInit
}

TEST(SimgpuProcesses, ABadConfigurationIsReportedWithItsLocation) {
  std::string conf = TestDir() + "/bad.conf";
  FILE* f = std::fopen(conf.c_str(), "w");
  std::fputs("memory=80GiB\nsms=lots\n", f);
  std::fclose(f);
  int code = 0;
  RunWorker({"info"}, {"VGPU_SIMGPU_CONFIG=" + conf, "VGPU_SIMGPU_STATE=" + TestDir() + "/s2"},
            &code);
  EXPECT_EQ(code, 1);
  // The message (on the worker's stderr) names the file, line and column; the parser's own tests
  // check its wording.
  unlink(conf.c_str());
}

}  // namespace
}  // namespace vgpu::simgpu::testing
