// `vgpu dra --sim` as a process against the fake API server (HTTPS, kubeconfig): it publishes
// the node's ResourceSlices, registers with the kubelet emulator, prepares a claim allocated
// from those slices, and on SIGTERM exits 0 and removes its sockets; with a GPU mode file, a
// mig-dynamic GPU's MIG devices are published. Bad flags exit 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "background_process.h"
#include "dra/cdi_spec.h"
#include "dra_kubelet_emulator.h"
#include "fake_api_server.h"
#include "kubeconfig.h"
#include "run_command.h"
#include "slice_rules.h"

namespace vgpu::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using vgpu::testing::BackgroundProcess;
using vgpu::testing::RunCommand;
namespace drapb = vgpu::testing::drapb;

TEST(DraCliTest, HelpAndBadFlags) {
  EXPECT_EQ(RunCommand(std::string(VGPU_BIN) + " dra --help").exit_code, 0);
  auto bad = RunCommand(std::string(VGPU_BIN) + " dra --sim --log-level 9");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--log-level"), std::string::npos) << bad.err;
  auto no_sim = RunCommand(std::string(VGPU_BIN) + " dra --sim-devices 2");
  EXPECT_EQ(no_sim.exit_code, 2);
  EXPECT_NE(no_sim.err.find("--sim-devices: needs --sim"), std::string::npos) << no_sim.err;
  char tmpl[] = "/tmp/dracli.XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/modes.yaml") << "version: v1\ngpus:\n  - devices: all\n    mode: migs\n";
  auto modes = RunCommand(std::string(VGPU_BIN) + " dra --sim --gpu-modes " + dir + "/modes.yaml");
  EXPECT_EQ(modes.exit_code, 2);
  EXPECT_NE(modes.err.find("--gpu-modes: "), std::string::npos) << modes.err;
  EXPECT_NE(modes.err.find("migs"), std::string::npos) << modes.err;
  fs::remove_all(dir);
}

TEST(DraCliTest, PublishesRegistersPreparesAndStops) {
  char tmpl[] = "/tmp/dracli.XXXXXX";
  const std::string root = mkdtemp(tmpl);
  fs::create_directories(root + "/registry");
  // GPU 1 offers MIG devices (every placement) beside its software device.
  std::ofstream(root + "/modes.yaml")
      << "version: v1\ngpus:\n  - devices: [1]\n    mode: mig-dynamic\n";
  k8s::testing::FakeApiServer api;
  const std::string kubeconfig = k8s::testing::WriteKubeconfig(api, root);
  BackgroundProcess daemon({VGPU_BIN,
                            "dra",
                            "--sim",
                            "--sim-devices",
                            "2",
                            "--kubeconfig",
                            kubeconfig,
                            "--node-name",
                            "cli-node",
                            "--registry-dir",
                            root + "/registry",
                            "--plugin-dir",
                            root + "/plugin",
                            "--cdi-dir",
                            root + "/cdi",
                            "--state-dir",
                            root + "/state",
                            "--libvgpu",
                            root + "/libvgpu.so",
                            "--arbiter-dir",
                            root + "/arbiter",
                            "--gpu-modes",
                            root + "/modes.yaml",
                            "--sample-interval-ms",
                            "200"},
                           {"VGPU_SIMGPU_STATE=" + root + "/simstate", "VGPU_SIMGPU_LOG_LEVEL=1"},
                           root + "/dra.log");
  vgpu::testing::DraKubeletEmulator kubelet(root + "/registry");
  kubelet.Start();
  ASSERT_TRUE(kubelet.WaitForRegistrations(1, 30'000)) << daemon.Log();
  std::vector<json> slices;
  for (int i = 0; i < 300 && slices.size() < 2; ++i) {
    slices = api.ResourceSlices();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(slices.size(), 2u) << daemon.Log();
  EXPECT_EQ(testing::ValidateResourceSlices(slices), std::vector<std::string>{});
  // gpu-0, gpu-1 and the 25 MIG placements of the simulated H100 that is GPU 1.
  ASSERT_EQ(slices[1]["spec"]["devices"].size(), 27u) << daemon.Log();
  for (const json& d : slices[1]["spec"]["devices"]) {
    const std::string name = d["name"];
    EXPECT_TRUE(name == "gpu-0" || name.rfind("gpu-1", 0) == 0) << name;
  }

  testing::TestAllocator alloc("gpu.vgpu.io", slices);
  std::string why;
  auto claim = alloc.Allocate(
      {"ns", "c", "uid-c", "gpu", "type", "gpu", {{"memory", "1Gi"}, {"cores", "50"}}}, &why);
  ASSERT_TRUE(claim) << why;
  api.PutResourceClaim(*claim);
  drapb::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(kubelet.Prepare({{"ns", "uid-c", "c"}}, &resp).ok());
  EXPECT_EQ(resp.claims().at("uid-c").error(), "") << daemon.Log();
  EXPECT_TRUE(fs::exists(CdiSpecPath(root + "/cdi", "uid-c")));

  EXPECT_EQ(daemon.Stop(SIGTERM, std::chrono::seconds(10)), 0) << daemon.Log();
  EXPECT_FALSE(fs::exists(root + "/registry/gpu.vgpu.io-reg.sock"));
  EXPECT_FALSE(fs::exists(root + "/plugin/dra.sock"));
  kubelet.Stop();
  if (!::testing::Test::HasFailure()) fs::remove_all(root);
}

}  // namespace
}  // namespace vgpu::dra
