// End to end with DRA on one simulated GPU (16 GiB), against the local API server of tests/k8s:
//   - the driver publishes the node's ResourceSlices; they pass the API's rules (slice_rules.h);
//   - a test allocator that follows the structured-parameters rules allocates from them claim
//     "a" (4 GiB, 30 % of the cores) and claim "b" (2 GiB, 70 %); a third claim for 1 % of the
//     cores does not fit (the cores are all taken);
//   - kubelet (DraKubeletEmulator) prepares "a" and "b" through the driver's dra/v1 socket;
//   - the containers run as processes with the CDI spec's edits (container_runtime.h): "a" gets
//     exactly 4 GiB (one more byte fails), "b" exactly 2 GiB, and "a"'s saturating kernels run
//     30 % of the time (within 3 points) while "b" saturates the GPU too;
//   - on a simulated H200 in mode mig-dynamic, a claim of class mig.vgpu.io for a 1g.18gb is
//     allocated from the published MIG devices (a software slice of that GPU then is not), its
//     instance made at Prepare; the container with CUDA_VISIBLE_DEVICES=<its MIG UUID> gets
//     exactly the instance's memory (one more byte fails); after a driver restart Unprepare
//     destroys the instance.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "child_process.h"
#include "container_runtime.h"
#include "device/nvml_backend.h"
#include "dra/agent.h"
#include "dra/cdi_spec.h"
#include "dra/driver.h"
#include "dra/gpu_offers.h"
#include "dra/kube_api.h"
#include "dra/plugin_server.h"
#include "dra_kubelet_emulator.h"
#include "e2e_util.h"
#include "fake_api_server.h"
#include "k8s/api/http_kube_client.h"
#include "mig_minors.h"
#include "sanitizer_env.h"
#include "slice_rules.h"

namespace vgpu::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using vgpu::testing::ChildProcess;
using vgpu::testing::DraKubeletEmulator;
using vgpu::testing::RunToCompletion;

constexpr const char* kGpu = "GPU-e2ed0a00-aaaa-4000-8000-000000000000";
constexpr int64_t kGiB = 1LL << 30;
constexpr uint64_t kRunNs = 3'000'000'000ULL;
constexpr uint64_t kMeasureFromNs = 1'000'000'000ULL;

ContainerSpec FromCdi(const std::string& path) {
  ContainerSpec c;
  const json spec = json::parse(ReadFile(path), nullptr, false);
  if (!spec.is_object()) return c;
  const json& edits = spec["devices"][0]["containerEdits"];
  for (const json& e : edits["env"]) {
    const std::string s = e;
    c.envs[s.substr(0, s.find('='))] = s.substr(s.find('=') + 1);
  }
  for (const json& m : edits["mounts"]) {
    c.mounts.push_back({m["containerPath"], m["hostPath"], m["options"][0] == "ro"});
  }
  return c;
}

// A fresh `root` with registry/ and arbiter/, the simulated GPUs of `devices_conf`
// (docs/simgpu.md) for this process and its children, and their NVML opened.
Result<std::unique_ptr<device::NvmlBackend>> OpenSimNode(const std::string& root,
                                                         const std::string& devices_conf) {
  fs::remove_all(root);
  fs::create_directories(root + "/registry");
  fs::create_directories(root + "/arbiter");
  std::ofstream(root + "/devices.conf") << devices_conf << "\n";
  setenv("VGPU_SIMGPU_CONFIG", (root + "/devices.conf").c_str(), 1);
  setenv("VGPU_SIMGPU_STATE", (root + "/simgpu.state").c_str(), 1);
  device::NvmlBackendOptions nvml;
  nvml.library_path = std::string(SIMGPU_DIR) + "/libnvidia-ml.so.1";
  nvml.cuda_library_path = std::string(SIMGPU_DIR) + "/libcuda.so.1";
  return device::NvmlBackend::Open(nvml);
}

// The driver's files under `root`, libvgpu.so from the build.
dra::DriverOptions DriverOptionsAt(const std::string& root) {
  dra::DriverOptions o;
  o.pool = "e2e-node";
  o.cdi_dir = root + "/cdi";
  o.state_dir = root + "/state";
  o.slices.host_libvgpu = LIBVGPU_PATH;
  o.slices.arbiter_dir = root + "/arbiter";
  o.slices.context_overhead = 0;
  return o;
}

TEST(DraClaimTest, PreparedClaimsRunWithExactlyTheirMemoryAndCores) {
  const std::string root = "/tmp/vgpu-e2e-dra-" + std::to_string(getpid());
  auto backend = OpenSimNode(root, std::string("model=h100 memory=16GiB uuid=") + kGpu);
  ASSERT_TRUE(backend.has_value()) << backend.error().ToString();
  auto gpus = (*backend)->Discover();
  ASSERT_TRUE(gpus.has_value());
  ASSERT_EQ(gpus->size(), 1u);

  k8s::testing::FakeApiServer api(
      k8s::testing::FakeApiServer::Options{.tls = false, .token = "", .threads = 16});
  auto client = k8s::HttpKubeClient::Create(api.ClientConfig());
  ASSERT_TRUE(client.has_value());
  dra::SlicePublisher publisher(client->get(), "e2e-node", dra::kDriverName);
  dra::Agent agent(dra::AgentOptions{.sample_interval_ms = 200}, backend->get(), *gpus, &publisher);
  agent.Start();
  ASSERT_EQ(publisher.generation(), 1);
  const std::vector<json> slices = api.ResourceSlices();
  EXPECT_EQ(dra::testing::ValidateResourceSlices(slices), std::vector<std::string>{});

  dra::testing::TestAllocator allocator(dra::kDriverName, slices);
  std::string why;
  auto a = allocator.Allocate(
      {"default", "a", "uid-a", "gpu", "type", "gpu", {{"memory", "4Gi"}, {"cores", "30"}}}, &why);
  ASSERT_TRUE(a) << why;
  auto b = allocator.Allocate(
      {"default", "b", "uid-b", "gpu", "type", "gpu", {{"memory", "2Gi"}, {"cores", "70"}}}, &why);
  ASSERT_TRUE(b) << why;
  EXPECT_FALSE(allocator.Allocate(
      {"default", "c", "uid-c", "gpu", "type", "gpu", {{"memory", "1Gi"}, {"cores", "1"}}}, &why));
  api.PutResourceClaim(*a);
  api.PutResourceClaim(*b);

  dra::KubeClaimSource claims(client->get());
  dra::DriverOptions options = DriverOptionsAt(root);
  dra::Driver driver(options, *gpus, &claims,
                     [&agent](const std::string& uuid) { return agent.Healthy(uuid); });
  ASSERT_TRUE(driver.Init().ok());
  dra::PluginServer server({.registry_dir = root + "/registry", .plugin_dir = root + "/plugin"},
                           &driver);
  ASSERT_TRUE(server.Start().ok());
  DraKubeletEmulator kubelet(root + "/registry");
  kubelet.Start();
  ASSERT_TRUE(kubelet.WaitForRegistrations(1, 10'000));
  testing::drapb::NodePrepareResourcesResponse prepared;
  ASSERT_TRUE(
      kubelet.Prepare({{"default", "uid-a", "a"}, {"default", "uid-b", "b"}}, &prepared).ok());
  for (const char* uid : {"uid-a", "uid-b"}) {
    ASSERT_EQ(prepared.claims().at(uid).error(), "") << uid;
  }

  const std::vector<std::string> runtime = SimGpuRuntimeEnv(SIMGPU_DIR, root);
  std::map<std::string, ContainerSpec> containers;
  for (const char* name : {"a", "b"}) {
    containers[name] = FromCdi(dra::CdiSpecPath(root + "/cdi", std::string("uid-") + name));
  }
  auto env_of = [&](const std::string& name) {
    std::vector<std::string> r = runtime;
    r.push_back(SimGpuVisibleDevices(containers[name], {kGpu}));
    return containers[name].Environment(r, vgpu::testing::kSanitizerRuntime);
  };
  // Memory: exactly the claimed bytes, one more fails.
  for (const auto& [name, bytes] :
       std::map<std::string, int64_t>{{"a", 4 * kGiB}, {"b", 2 * kGiB}}) {
    int code = -1;
    const std::string out =
        RunToCompletion({WORKER_PATH, std::to_string(bytes)}, env_of(name), &code);
    EXPECT_EQ(code, 0) << out;
    auto seen = Lines(out);
    EXPECT_EQ(seen["device.0"], kGpu) << out;
    EXPECT_EQ(seen["first.0"], "CUDA_SUCCESS") << name << "\n" << out;
    EXPECT_EQ(seen["extra.0"], "CUDA_ERROR_OUT_OF_MEMORY") << name << "\n" << out;
  }
  // Cores: both saturate the GPU; a gets its 30 %.
  std::map<std::string, std::unique_ptr<ChildProcess>> tenants;
  for (const char* name : {"a", "b"}) {
    tenants[name] = std::make_unique<ChildProcess>(
        std::vector<std::string>{VGPU_BIN, "bench", "tenant", "--kernel-ns", "1000000", "--depth",
                                 "11", "--stop-ns", std::to_string(kRunNs), "--out",
                                 root + "/" + name + ".kernels"},
        env_of(name));
  }
  for (auto& [name, t] : tenants) ASSERT_EQ(t->ReadLine(60'000), "ready") << name;
  const uint64_t start = MonotonicNs() + 300'000'000ULL;
  for (auto& [name, t] : tenants) t->Write(std::to_string(start) + "\n");
  for (auto& [name, t] : tenants) ASSERT_EQ(t->ReadLine(30'000), "done") << name;
  const double share_a = ShareOf(root + "/a.kernels", start + kMeasureFromNs, start + kRunNs);
  const double share_b = ShareOf(root + "/b.kernels", start + kMeasureFromNs, start + kRunNs);
  std::printf("e2e: DRA claim a share %.1f %%, b %.1f %%\n", share_a, share_b);
  EXPECT_NEAR(share_a, 30.0, 3.0);
  EXPECT_NEAR(share_b, 70.0, 8.0);
  for (auto& [name, t] : tenants) {
    t->CloseStdin();
    EXPECT_EQ(t->Wait(30'000), 0) << name;
  }

  testing::drapb::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(kubelet.Unprepare({{"default", "uid-a", "a"}, {"default", "uid-b", "b"}}, &un).ok());
  kubelet.Stop();
  server.Stop();
  agent.Stop();
  if (!::testing::Test::HasFailure()) fs::remove_all(root);
}

TEST(DraClaimTest, AMigClaimGetsItsInstanceWithExactlyItsMemory) {
  constexpr const char* kH200 = "GPU-e2ed0a00-bbbb-4000-8000-000000000000";
  const std::string root = "/tmp/vgpu-e2e-dra-mig-" + std::to_string(getpid());
  auto backend = OpenSimNode(root, std::string("model=h200 uuid=") + kH200);
  ASSERT_TRUE(backend.has_value()) << backend.error().ToString();
  auto gpus = (*backend)->Discover();
  ASSERT_TRUE(gpus.has_value());
  ASSERT_EQ(gpus->size(), 1u);
  auto modes = node::ParseGpuModeConfig(
      "version: v1\ngpus:\n  - devices: all\n    mode: mig-dynamic\n", "modes.yaml");
  ASSERT_TRUE(modes.has_value());
  const std::vector<dra::GpuOffer> offers = dra::SetUpGpuOffers(backend->get(), *gpus, *modes, {});
  ASSERT_TRUE(offers[0].Dynamic());

  k8s::testing::FakeApiServer api(
      k8s::testing::FakeApiServer::Options{.tls = false, .token = "", .threads = 16});
  auto client = k8s::HttpKubeClient::Create(api.ClientConfig());
  ASSERT_TRUE(client.has_value());
  dra::SlicePublisher publisher(client->get(), "e2e-node", dra::kDriverName);
  dra::Agent agent(dra::AgentOptions{.sample_interval_ms = 200}, backend->get(), *gpus, &publisher);
  agent.SetOffers(offers);
  agent.Start();
  const std::vector<json> slices = api.ResourceSlices();
  EXPECT_EQ(dra::testing::ValidateResourceSlices(slices), std::vector<std::string>{});
  size_t published = 0;
  for (const json& sl : slices) published += sl["spec"].value("devices", json::array()).size();
  EXPECT_EQ(published, 26u);  // the software device and 25 MIG placements

  dra::testing::TestAllocator allocator(dra::kDriverName, slices);
  std::string why;
  auto m = allocator.Allocate(
      {"default", "m", "uid-m", "mig", "type", "mig", {}, {{"profile", "1g.18gb"}}}, &why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->at("status")["allocation"]["devices"]["results"][0]["device"],
            "gpu-0-mig-1g-18gb-0");
  EXPECT_FALSE(allocator.Allocate(
      {"default", "s", "uid-s", "gpu", "type", "gpu", {{"memory", "1Gi"}, {"cores", "10"}}}, &why));
  api.PutResourceClaim(*m);

  dra::KubeClaimSource claims(client->get());
  dra::DriverOptions options = DriverOptionsAt(root);
  options.device_list.probe_root = root;
  ASSERT_TRUE(dra::testing::WriteMigMinors(root, (*gpus)[0].minor_number));
  auto start_driver = [&] {
    auto d = std::make_unique<dra::Driver>(
        options, *gpus, &claims, [&agent](const std::string& uuid) { return agent.Healthy(uuid); });
    EXPECT_TRUE(d->Init().ok());
    EXPECT_TRUE(d->EnableMig(backend->get(), offers).ok());
    return d;
  };
  std::unique_ptr<dra::Driver> driver = start_driver();
  auto server = std::make_unique<dra::PluginServer>(
      dra::PluginServerOptions{.registry_dir = root + "/registry", .plugin_dir = root + "/plugin"},
      driver.get());
  ASSERT_TRUE(server->Start().ok());
  DraKubeletEmulator kubelet(root + "/registry");
  kubelet.Start();
  ASSERT_TRUE(kubelet.WaitForRegistrations(1, 10'000));
  testing::drapb::NodePrepareResourcesResponse prepared;
  ASSERT_TRUE(kubelet.Prepare({{"default", "uid-m", "m"}}, &prepared).ok());
  ASSERT_EQ(prepared.claims().at("uid-m").error(), "");

  auto instances = (*backend)->MigInstances(0);
  ASSERT_TRUE(instances.has_value());
  ASSERT_EQ(instances->size(), 1u);
  const device::MigInstance made = (*instances)[0];
  EXPECT_EQ(made.profile, "1g.18gb");
  EXPECT_EQ(made.start, 0);
  ContainerSpec container = FromCdi(dra::CdiSpecPath(root + "/cdi", "uid-m"));
  ASSERT_EQ(container.envs["NVIDIA_VISIBLE_DEVICES"], made.uuid);
  std::vector<std::string> env = SimGpuRuntimeEnv(SIMGPU_DIR, root);
  env.push_back("CUDA_VISIBLE_DEVICES=" + made.uuid);
  int code = -1;
  const std::string out =
      RunToCompletion({WORKER_PATH, std::to_string(made.memory_bytes)},
                      container.Environment(env, vgpu::testing::kSanitizerRuntime), &code);
  EXPECT_EQ(code, 0) << out;
  auto seen = Lines(out);
  EXPECT_EQ(seen["count"], "1") << out;
  EXPECT_EQ(seen["first.0"], "CUDA_SUCCESS") << out;
  EXPECT_EQ(seen["extra.0"], "CUDA_ERROR_OUT_OF_MEMORY") << out;
  std::printf("e2e: DRA MIG claim %s@%d, %llu MiB\n", made.profile.c_str(), made.start,
              static_cast<unsigned long long>(made.memory_bytes >> 20));

  // The driver restarts between Prepare and Unprepare; Unprepare destroys the instance.
  server->Stop();
  server.reset();
  driver.reset();
  driver = start_driver();
  server = std::make_unique<dra::PluginServer>(
      dra::PluginServerOptions{.registry_dir = root + "/registry", .plugin_dir = root + "/plugin"},
      driver.get());
  ASSERT_TRUE(server->Start().ok());
  EXPECT_EQ((*backend)->MigInstances(0)->size(), 1u);
  testing::drapb::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(kubelet.Unprepare({{"default", "uid-m", "m"}}, &un).ok());
  EXPECT_EQ(un.claims().at("uid-m").error(), "");
  EXPECT_EQ((*backend)->MigInstances(0)->size(), 0u);
  kubelet.Stop();
  server->Stop();
  agent.Stop();
  if (!::testing::Test::HasFailure()) fs::remove_all(root);
}

}  // namespace
}  // namespace vgpu::e2e
