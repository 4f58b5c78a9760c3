// NodePrepareResources as kubelet calls it: over the driver's dra.sock (DraKubeletEmulator),
// claims read from the local API server of tests/k8s (plain HTTP on loopback), each prepared
// into a slice (limits file, accounting region), a CDI spec and the checkpoint (fsynced), then
// unprepared (not timed). Reports the p50 and p99 of one call, for 1 claim and for 32 claims
// in one call, on 4 GPUs of 80 GiB.
//   build/bin/bench_dra_prepare --benchmark_min_time=2
//   VGPU_BENCH_DIR=/dev/shm build/bin/bench_dra_prepare --benchmark_min_time=2   (no disk)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "dra/driver.h"
#include "dra/kube_api.h"
#include "dra/plugin_server.h"
#include "dra/resource_slices.h"
#include "dra_kubelet_emulator.h"
#include "fake_api_server.h"
#include "k8s/http_kube_client.h"
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

  Node() {
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
      gpus.push_back(g);
    }
    client = std::move(*k8s::HttpKubeClient::Create(api.ClientConfig()));
    claims = std::make_unique<KubeClaimSource>(client.get());
    DriverOptions o;
    o.pool = "node-a";
    o.cdi_dir = root + "/cdi";
    o.state_dir = root + "/state";
    o.slices.host_libvgpu = root + "/libvgpu.so";
    o.slices.arbiter_dir = root + "/arbiter";
    driver = std::make_unique<Driver>(o, gpus, claims.get(), nullptr);
    (void)driver->Init();
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
  std::vector<ClaimArg> Claims(int n) {
    std::vector<SliceGpu> sg;
    for (const auto& g : gpus) sg.push_back({.info = g});
    testing::TestAllocator alloc(kDriverName, BuildResourceSlices("node-a", kDriverName, sg, 1));
    std::vector<ClaimArg> out;
    for (int i = 0; i < n; ++i) {
      std::string why;
      const std::string uid = "bench-" + std::to_string(i);
      auto c = alloc.Allocate({"ns",
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

void BM_Prepare(benchmark::State& state) {
  Node node;
  const std::vector<ClaimArg> claims = node.Claims(static_cast<int>(state.range(0)));
  std::vector<double> samples;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    vgpu::testing::drapb::NodePrepareResourcesResponse resp;
    if (!node.kubelet->Prepare(claims, &resp).ok() ||
        resp.claims_size() != static_cast<int>(claims.size())) {
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
BENCHMARK(BM_Prepare)->Arg(1)->Arg(32)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vgpu::dra

BENCHMARK_MAIN();
