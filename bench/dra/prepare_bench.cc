// NodePrepareResources as kubelet calls it: over the driver's dra.sock (DraKubeletEmulator),
// claims read from the local API server of tests/k8s (plain HTTP on loopback), each prepared
// into a slice (limits file, accounting region), a CDI spec and the checkpoint (fsynced), then
// unprepared (not timed). Reports the p50 and p99 of one call, for 1 claim and for 32 claims
// in one call, on 4 GPUs of 80 GiB; and for one MIG claim (a 1g.10gb of a mig-dynamic H100 on
// the scripted driver of device/fake_backend.h: the instance is made at Prepare, with its
// journal entries, and destroyed at Unprepare).
//   build/bin/bench_dra_prepare --benchmark_min_time=2
//   VGPU_BENCH_DIR=/dev/shm build/bin/bench_dra_prepare --benchmark_min_time=2   (no disk)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "device/fake_backend.h"
#include "dra/driver.h"
#include "dra/gpu_offers.h"
#include "dra/kube_api.h"
#include "dra/plugin_server.h"
#include "dra/resource_slices.h"
#include "dra_kubelet_emulator.h"
#include "fake_api_server.h"
#include "k8s/api/http_kube_client.h"
#include "mig_minors.h"
#include "slice_rules.h"

namespace vgpu::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ClaimArg = vgpu::testing::DraKubeletEmulator::ClaimArg;

struct Node {
  std::string root;
  k8s::testing::FakeApiServer api{
      k8s::testing::FakeApiServer::Options{.tls = false, .token = "", .threads = 16}};
  std::unique_ptr<k8s::HttpKubeClient> client;
  std::unique_ptr<KubeClaimSource> claims;
  std::unique_ptr<Driver> driver;
  std::unique_ptr<PluginServer> server;
  std::unique_ptr<vgpu::testing::DraKubeletEmulator> kubelet;
  std::vector<device::DeviceInfo> gpus;
  device::FakeBackend fake;
  std::vector<GpuOffer> offers;

  explicit Node(bool mig = false) {
    // $VGPU_BENCH_DIR (default /tmp) holds the driver's files: the disk's fsync latency is most
    // of the time.
    const char* dir = std::getenv("VGPU_BENCH_DIR");
    std::string tmpl = std::string(dir != nullptr ? dir : "/tmp") + "/drab.XXXXXX";
    root = mkdtemp(tmpl.data());
    for (int i = 0; i < 4; ++i) {
      device::DeviceInfo g;
      g.index = i;
      g.uuid = "GPU-bbbbbbbb-0000-0000-0000-00000000000" + std::to_string(i);
      g.name = "NVIDIA H100 80GB HBM3";
      g.memory_total_bytes = 80ULL << 30;
      g.sm_count = 132;
      g.minor_number = i;
      gpus.push_back(g);
      fake.AddDevice(g);
      fake.SetMigProfiles(i, TableMigProfiles(g));
    }
    client = std::move(*k8s::HttpKubeClient::Create(api.ClientConfig()));
    claims = std::make_unique<KubeClaimSource>(client.get());
    DriverOptions o;
    o.pool = "node-a";
    o.cdi_dir = root + "/cdi";
    o.state_dir = root + "/state";
    o.slices.host_libvgpu = root + "/libvgpu.so";
    o.slices.arbiter_dir = root + "/arbiter";
    o.device_list.probe_root = root;
    driver = std::make_unique<Driver>(o, gpus, claims.get(), nullptr);
    (void)driver->Init();
    offers.resize(gpus.size());
    if (mig) {
      auto modes = node::ParseGpuModeConfig(
          "version: v1\ngpus:\n  - devices: all\n    mode: mig-dynamic\n", "modes");
      offers = SetUpGpuOffers(&fake, gpus, *modes, {});
      (void)testing::WriteMigMinors(root, static_cast<int>(gpus.size()) - 1);
      (void)driver->EnableMig(&fake, offers);
    }
    fs::create_directories(root + "/registry");
    server = std::make_unique<PluginServer>(
        PluginServerOptions{.registry_dir = root + "/registry", .plugin_dir = root + "/plugin"},
        driver.get());
    (void)server->Start();
    kubelet = std::make_unique<vgpu::testing::DraKubeletEmulator>(root + "/registry");
    kubelet->Start();
    kubelet->WaitForRegistrations(1, 10'000);
  }
  ~Node() {
    kubelet->Stop();
    server->Stop();
    fs::remove_all(root);
  }

  // `n` claims of 1 GiB and 3 % of the cores each, allocated by the test allocator.
  std::vector<ClaimArg> Claims(int n, bool mig = false) {
    std::vector<SliceGpu> sg;
    for (size_t i = 0; i < gpus.size(); ++i) {
      sg.push_back({.info = gpus[i], .software = offers[i].software, .mig_devices = offers[i].mig});
    }
    testing::TestAllocator alloc(kDriverName, BuildResourceSlices("node-a", kDriverName, sg, 1));
    std::vector<ClaimArg> out;
    for (int i = 0; i < n; ++i) {
      std::string why;
      const std::string uid = "bench-" + std::to_string(i);
      auto c = mig ? alloc.Allocate({"ns",
                                     "c" + std::to_string(i),
                                     uid,
                                     "mig",
                                     "type",
                                     "mig",
                                     {},
                                     {{"profile", "1g.10gb"}}},
                                    &why)
                   : alloc.Allocate({"ns",
                                     "c" + std::to_string(i),
                                     uid,
                                     "gpu",
                                     "type",
                                     "gpu",
                                     {{"memory", "1Gi"}, {"cores", "3"}}},
                                    &why);
      api.PutResourceClaim(*c);
      out.push_back({"ns", uid, "c" + std::to_string(i)});
    }
    return out;
  }
};

// range(0): claims per call; range(1): 1 for MIG claims.
void BM_Prepare(benchmark::State& state) {
  const bool mig = state.range(1) != 0;
  Node node(mig);
  const std::vector<ClaimArg> claims = node.Claims(static_cast<int>(state.range(0)), mig);
  std::vector<double> samples;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    vgpu::testing::drapb::NodePrepareResourcesResponse resp;
    if (!node.kubelet->Prepare(claims, &resp).ok() ||
        resp.claims_size() != static_cast<int>(claims.size()) ||
        !resp.claims().begin()->second.error().empty()) {
      state.SkipWithError("Prepare failed");
      break;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    samples.push_back(s * 1e6);
    state.PauseTiming();
    vgpu::testing::drapb::NodeUnprepareResourcesResponse un;
    (void)node.kubelet->Unprepare(claims, &un);
    state.ResumeTiming();
  }
  if (samples.empty()) return;
  std::sort(samples.begin(), samples.end());
  state.counters["p50_us"] = samples[samples.size() / 2];
  state.counters["p99_us"] = samples[std::min(samples.size() - 1, samples.size() * 99 / 100)];
  state.counters["claims"] = static_cast<double>(claims.size());
}
BENCHMARK(BM_Prepare)
    ->ArgNames({"claims", "mig"})
    ->Args({1, 0})
    ->Args({32, 0})
    ->Args({1, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vgpu::dra

BENCHMARK_MAIN();
