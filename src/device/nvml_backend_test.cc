// NvmlBackend against the simulated libnvidia-ml.so.1 and libcuda.so.1 (src/simgpu): discovery,
// sampling, graceful degradation of what the simulation does not implement, the NUMA fallback
// through sysfs, a process that really holds device memory, and GPM on Hopper (not on Ampere).
#include "device/nvml_backend.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "device/injecting_backend.h"
#include "support/temp_dir.h"

namespace vgpu::device {
namespace {

namespace fs = std::filesystem;

TEST(NormalizePciBusIdTest, Forms) {
  EXPECT_EQ(NormalizePciBusId("00000000:18:00.0"), "0000:18:00.0");
  EXPECT_EQ(NormalizePciBusId("0000:2A:00.0"), "0000:2a:00.0");
  EXPECT_EQ(NormalizePciBusId("00000001:C3:00.0"), "0001:c3:00.0");
  EXPECT_EQ(NormalizePciBusId("garbage"), "garbage");
}

TEST(GpmMetricsFromTest, UnitsAndErrors) {
  const unsigned ids[] = {2, 5, 10, 20, 61, 999};
  const int returns[] = {0, 3, 0, 0, 0, 0};  // tensor activity: NOT_SUPPORTED
  const double values[] = {45.0, 12.0, 80.0, 2.0, 1.5, 7.0};
  GpmMetrics m = GpmMetricsFrom(ids, returns, values, 6);
  EXPECT_DOUBLE_EQ(*m.sm_activity, 0.45);
  EXPECT_FALSE(m.tensor_activity.has_value());
  EXPECT_DOUBLE_EQ(*m.dram_activity, 0.80);
  EXPECT_DOUBLE_EQ(*m.pcie_transmit_bytes_per_second, 2.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*m.nvlink_transmit_bytes_per_second, 1.5 * 1024 * 1024);
  EXPECT_FALSE(m.graphics_activity.has_value());
  EXPECT_FALSE(m.pcie_receive_bytes_per_second.has_value());
}

TEST(NvmlBackendOpenTest, MissingLibraryIsUnavailable) {
  NvmlBackendOptions options;
  options.library_path = "/nonexistent/libnvidia-ml.so.1";
  auto backend = NvmlBackend::Open(options);
  ASSERT_FALSE(backend.has_value());
  EXPECT_EQ(backend.error().code(), StatusCode::kUnavailable);
  EXPECT_NE(backend.error().message().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

TEST(NvmlBackendOpenTest, NonNvmlLibraryIsRefused) {
  NvmlBackendOptions options;
  options.library_path = "libm.so.6";
  auto backend = NvmlBackend::Open(options);
  ASSERT_FALSE(backend.has_value());
  EXPECT_NE(backend.error().message().find("not an NVML library"), std::string::npos);
}

#ifdef VGPU_SIM_NVML
class SimNvmlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new vgpu::testing::TempDir("vgpu-device-test");
    ASSERT_TRUE(tmp_->ok()) << tmp_->error();
    dir_ = new fs::path(tmp_->path());
    fs::create_directories(*dir_ / "sys/bus/pci/devices/0000:2a:00.0");
    std::ofstream(*dir_ / "sys/bus/pci/devices/0000:2a:00.0/numa_node") << "1\n";
    std::ofstream(*dir_ / "devices.conf") << "model=h100\nmodel=a100 memory=4GiB\n";
    setenv("VGPU_SIMGPU_CONFIG", (*dir_ / "devices.conf").c_str(), 1);
    setenv("VGPU_SIMGPU_STATE", (*dir_ / "state").c_str(), 1);
    setenv("VGPU_SIMGPU_LOG_LEVEL", "1", 1);
    NvmlBackendOptions options;
    options.library_path = VGPU_SIM_NVML;
    options.cuda_library_path = VGPU_SIM_CUDA;
    options.sysfs_root = (*dir_ / "sys").string();
    auto opened = NvmlBackend::Open(options);
    ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
    backend_ = opened->release();
  }
  static void TearDownTestSuite() {
    delete backend_;
    delete tmp_;
    delete dir_;
  }
  static vgpu::testing::TempDir* tmp_;
  static fs::path* dir_;
  static NvmlBackend* backend_;
};
vgpu::testing::TempDir* SimNvmlTest::tmp_ = nullptr;
fs::path* SimNvmlTest::dir_ = nullptr;
NvmlBackend* SimNvmlTest::backend_ = nullptr;

TEST_F(SimNvmlTest, DiscoversDevices) {
  auto devices = backend_->Discover();
  ASSERT_TRUE(devices.has_value()) << devices.error().ToString();
  ASSERT_EQ(devices->size(), 2u);
  const DeviceInfo& a = (*devices)[0];
  const DeviceInfo& b = (*devices)[1];
  EXPECT_EQ(a.index, 0);
  EXPECT_EQ(b.index, 1);
  EXPECT_EQ(a.uuid.substr(0, 4), "GPU-");
  EXPECT_NE(a.uuid, b.uuid);
  EXPECT_NE(a.name.find("H100"), std::string::npos) << a.name;
  EXPECT_EQ(a.memory_total_bytes, 80ULL << 30);
  EXPECT_EQ(b.memory_total_bytes, 4ULL << 30);
  EXPECT_EQ(a.pci_bus_id, "0000:18:00.0");
  EXPECT_EQ(b.pci_bus_id, "0000:2a:00.0");
  EXPECT_EQ(a.sm_count, 132);  // through the simulated CUDA driver
  EXPECT_EQ(b.sm_count, 108);
  EXPECT_EQ(a.numa_node, -1);  // no sysfs entry
  EXPECT_EQ(b.numa_node, 1);   // from the sysfs fallback
  EXPECT_TRUE(a.nvlink_peers.empty());
  EXPECT_NE(backend_->Describe().find("NVML"), std::string::npos);
}

TEST_F(SimNvmlTest, SamplesDegradeGracefully) {
  ASSERT_TRUE(backend_->Discover().has_value());
  auto s = backend_->Sample(0);
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  ASSERT_TRUE(s->sm_utilization.has_value());
  ASSERT_TRUE(s->temperature_celsius.has_value());
  ASSERT_TRUE(s->power_watts.has_value());
  ASSERT_TRUE(s->power_limit_watts.has_value());
  EXPECT_DOUBLE_EQ(*s->power_limit_watts, 700.0);
  // PCIe throughput is simulated (copies and managed-memory faults; nothing moved yet: 0).
  ASSERT_TRUE(s->pcie_transmit_bytes_per_second.has_value());
  EXPECT_EQ(*s->pcie_receive_bytes_per_second, 0.0);
  // Not simulated: absent, not zero.
  EXPECT_FALSE(s->pcie_replay_errors_total.has_value());
  EXPECT_FALSE(s->nvlink_transmit_bytes_total.has_value());
  EXPECT_TRUE(s->nvlink_links.empty());
  EXPECT_EQ(backend_->Sample(5).error().code(), StatusCode::kNotFound);
  // Without a configured topology the simulated nvmlDeviceGetNumaNodeId answers NOT_SUPPORTED,
  // and discovery used the sysfs fallback instead (DiscoversDevices).
  EXPECT_EQ(backend_->ReadTopology().error().code(), StatusCode::kUnavailable);
}

TEST_F(SimNvmlTest, NoEventsOnTheSimulation) {
  ASSERT_TRUE(backend_->Discover().has_value());
  EXPECT_FALSE(backend_->SupportsEvents());
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(backend_->WaitForEvents(30).empty());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(25));
}

// The recovery probe runs a real allocation, copy, kernel and copy on the simulated GPU; an
// injected stuck kernel makes it time out (and shows as the GPU's running kernel) until it is
// cleared or the GPU is reset; the other GPU is not affected.
TEST_F(SimNvmlTest, TheProbeRunsRealWorkAndFailsBehindAStuckKernel) {
  NvmlBackendOptions options;
  options.library_path = VGPU_SIM_NVML;
  options.cuda_library_path = VGPU_SIM_CUDA;
  options.sysfs_root = (*dir_ / "sys").string();
  options.probe_timeout_ms = 300;
  auto nvml = NvmlBackend::Open(options);
  ASSERT_TRUE(nvml.has_value()) << nvml.error().ToString();
  InjectingBackend b(std::move(*nvml), VGPU_SIM_NVML);
  auto devices = b.Discover();
  ASSERT_TRUE(devices.has_value());
  const std::string gpu0 = (*devices)[0].uuid;
  Status ok = b.Probe(0);
  EXPECT_TRUE(ok.ok()) << ok.ToString();
  ASSERT_TRUE(b.Sample(0).has_value());
  EXPECT_FALSE(b.Sample(0)->running_kernel.has_value());

  // The next kernel on GPU 0, of any process (here the probe's own), never ends.
  ASSERT_TRUE(b.InjectStuckKernel(gpu0, 0).ok());
  Status failed = b.Probe(0);
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.message().find("did not complete within 300 ms"), std::string::npos)
      << failed.ToString();
  auto sample = b.Sample(0);
  ASSERT_TRUE(sample.has_value() && sample->running_kernel.has_value());
  EXPECT_EQ(sample->running_kernel->pid, static_cast<uint32_t>(getpid()));
  EXPECT_GE(sample->running_kernel->running_ns, 300'000'000);
  EXPECT_EQ(b.InjectStuckKernel(gpu0, 0).code(), StatusCode::kFailedPrecondition);
  Status other = b.Probe(1);
  EXPECT_TRUE(other.ok()) << other.ToString();

  // Cleared while a probe waits behind it: the stuck kernel ends, the probe's work after it
  // completes, and the probe passes.
  std::thread clear([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(b.ClearStuckKernel(gpu0).ok());
  });
  Status waited = b.Probe(0);
  clear.join();
  EXPECT_TRUE(waited.ok()) << waited.ToString();
  EXPECT_FALSE(b.Sample(0)->running_kernel.has_value());
  EXPECT_EQ(b.ClearStuckKernel(gpu0).code(), StatusCode::kNotFound);

  // Armed for another process: this one's kernels run; a reset clears a stuck kernel too.
  ASSERT_TRUE(b.InjectStuckKernel(gpu0, 1).ok());
  EXPECT_TRUE(b.Probe(0).ok());
  ASSERT_TRUE(b.ClearStuckKernel(gpu0).ok());  // disarms it
  ASSERT_TRUE(b.InjectStuckKernel(gpu0, 0).ok());
  EXPECT_FALSE(b.Probe(0).ok());
  ASSERT_TRUE(b.Reset(0).ok());
  EXPECT_TRUE(b.Probe(0).ok());
  EXPECT_EQ(b.InjectStuckKernel("GPU-nope", 0).code(), StatusCode::kInvalidArgument);
}

TEST_F(SimNvmlTest, SeesAProcessThatHoldsMemory) {
  ASSERT_TRUE(backend_->Discover().has_value());
  void* cuda = dlopen(VGPU_SIM_CUDA, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(cuda, nullptr);
  auto retain = reinterpret_cast<int (*)(void**, int)>(dlsym(cuda, "cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<int (*)(void*)>(dlsym(cuda, "cuCtxSetCurrent"));
  auto alloc = reinterpret_cast<int (*)(unsigned long long*, size_t)>(dlsym(cuda, "cuMemAlloc_v2"));
  auto free_mem = reinterpret_cast<int (*)(unsigned long long)>(dlsym(cuda, "cuMemFree_v2"));
  ASSERT_TRUE(retain && set_current && alloc && free_mem);
  void* ctx = nullptr;
  ASSERT_EQ(retain(&ctx, 1), 0);
  ASSERT_EQ(set_current(ctx), 0);
  unsigned long long ptr = 0;
  ASSERT_EQ(alloc(&ptr, 256ULL << 20), 0);

  auto s = backend_->Sample(1);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->memory_used_bytes, 256ULL << 20);
  ASSERT_EQ(s->processes.size(), 1u);
  EXPECT_EQ(s->processes[0].pid, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(s->processes[0].used_memory_bytes, 256ULL << 20);
  EXPECT_EQ(backend_->Sample(0)->memory_used_bytes, 0u);

  ASSERT_EQ(free_mem(ptr), 0);
  EXPECT_EQ(backend_->Sample(1)->memory_used_bytes, 0u);
}
// Runs one kernel of `ns` on the simulated h100 (device 0) through the simulated CUDA driver the
// backend loaded, and waits for it.
void RunSimKernel(uint64_t ns) {
  void* cuda = dlopen(VGPU_SIM_CUDA, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(cuda, nullptr);
  auto sym = [&](const char* name) { return dlsym(cuda, name); };
  auto retain = reinterpret_cast<int (*)(void**, int)>(sym("cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<int (*)(void*)>(sym("cuCtxSetCurrent"));
  auto load = reinterpret_cast<int (*)(void**, const void*)>(sym("cuModuleLoadData"));
  auto get = reinterpret_cast<int (*)(void**, void*, const char*)>(sym("cuModuleGetFunction"));
  auto launch =
      reinterpret_cast<int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, void*, void**, void**)>(sym("cuLaunchKernel"));
  auto sync = reinterpret_cast<int (*)()>(sym("cuCtxSynchronize"));
  ASSERT_TRUE(retain && set_current && load && get && launch && sync);
  void* ctx = nullptr;
  ASSERT_EQ(retain(&ctx, 0), 0);  // the h100
  ASSERT_EQ(set_current(ctx), 0);
  void* mod = nullptr;
  void* f = nullptr;
  ASSERT_EQ(load(&mod, "kernel"), 0);
  ASSERT_EQ(get(&f, mod, "sim_sleep_ns"), 0);
  void* params[] = {&ns};
  ASSERT_EQ(launch(f, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), 0);
  ASSERT_EQ(sync(), 0);
}

TEST_F(SimNvmlTest, GpmOnHopperFromTheTimelineNotOnAmpere) {
  ASSERT_TRUE(backend_->Discover().has_value());
  // The first sample only starts the interval.
  auto first = backend_->Sample(0);
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->gpm.has_value());
  const auto t0 = std::chrono::steady_clock::now();
  RunSimKernel(100'000'000);  // a 100 ms kernel in a window of about 200 ms
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto second = backend_->Sample(0);
  const double window_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(second.has_value());
  ASSERT_TRUE(second->gpm.has_value());
  ASSERT_TRUE(second->gpm->sm_activity.has_value());
  // Busy 0.1 s of the window (which began a little before t0).
  EXPECT_GT(*second->gpm->sm_activity, 0.1 / window_s * 0.8);
  EXPECT_LE(*second->gpm->sm_activity, 0.1 / window_s * 1.05);
  EXPECT_EQ(second->gpm->graphics_activity, second->gpm->sm_activity);
  EXPECT_TRUE(second->gpm->pcie_transmit_bytes_per_second.has_value());
  EXPECT_FALSE(second->gpm->tensor_activity.has_value());  // not simulated: unset
  EXPECT_FALSE(second->gpm->dram_activity.has_value());
  EXPECT_TRUE(second->mig_gpm.empty());  // MIG is off
  // The a100 has no GPM.
  ASSERT_TRUE(backend_->Sample(1).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  EXPECT_FALSE(backend_->Sample(1)->gpm.has_value());
}

// Clocks, the memory's temperature and energy as the simulated NVML models them (the h100's
// configured clocks; energy the integral of the modelled power: 10% of the 700 W limit idle plus
// 80% of it while a kernel runs); what it does not simulate is absent.
TEST_F(SimNvmlTest, ClocksMemoryTemperatureAndEnergyFollowTheModel) {
  ASSERT_TRUE(backend_->Discover().has_value());
  auto before = backend_->Sample(0);
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->sm_clock_hz, 1980e6);
  EXPECT_EQ(before->memory_clock_hz, 2619e6);
  ASSERT_TRUE(before->memory_temperature_celsius.has_value());
  EXPECT_GE(*before->memory_temperature_celsius, 30);
  EXPECT_LE(*before->memory_temperature_celsius, 70);
  ASSERT_TRUE(before->energy_joules_total.has_value());
  const auto t0 = std::chrono::steady_clock::now();
  RunSimKernel(200'000'000);
  auto after = backend_->Sample(0);
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(after.has_value());
  // The busy part: 560 W x 0.2 s = 112 J over the idle 70 W x the elapsed time (1 mJ steps).
  const double busy_j = *after->energy_joules_total - *before->energy_joules_total - 70 * elapsed_s;
  EXPECT_GT(busy_j, 112 * 0.9);
  EXPECT_LT(busy_j, 112 * 1.1 + 70 * 0.01);
  EXPECT_FALSE(after->encoder_utilization.has_value());
  EXPECT_FALSE(after->decoder_utilization.has_value());
  EXPECT_FALSE(after->remapped_rows_corrected_total.has_value());
  EXPECT_FALSE(after->row_remap_failed.has_value());
}
#endif

}  // namespace
}  // namespace vgpu::device
