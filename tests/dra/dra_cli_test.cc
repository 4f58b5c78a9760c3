// `vgpu dra --sim` as a process against the fake API server (HTTPS, kubeconfig): it publishes
// the node's ResourceSlices, registers with the kubelet emulator, prepares a claim allocated
// from those slices, answers /healthz, /readyz (503 until registered and published) and
// /metrics, and on SIGTERM exits 0 and removes its sockets; with a GPU mode file, a
// mig-dynamic GPU's MIG devices are published. `--dry-run` prints the slices and CDI specs
// without an API server, writing nothing. An API server that cannot be reached is named in
// full. Bad flags exit 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "dra/cdi_spec.h"
#include "dra_kubelet_emulator.h"
#include "fake_api_server.h"
#include "kubeconfig.h"
#include "slice_rules.h"
#include "support/background_process.h"
#include "support/run_command.h"
#include "support/temp_dir.h"
#include "support/wait_for.h"

namespace vgpu::dra {
namespace {

// The directory flags of `vgpu dra`, each under `root`.
void AppendDirectories(const std::string& root, std::vector<std::string>* args) {
  for (const char* dir : {"registry", "plugin", "cdi", "state", "arbiter"}) {
    args->push_back(std::string("--") + dir + "-dir");
    args->push_back(root + "/" + dir);
  }
  args->push_back("--libvgpu");
  args->push_back(root + "/libvgpu.so");
}

namespace fs = std::filesystem;
using nlohmann::json;
using vgpu::testing::BackgroundProcess;
using vgpu::testing::RunCommand;
namespace drapb = vgpu::testing::drapb;

// Each test's scratch directory (root_), kept when the test failed (the daemon's log is there).
// Under /tmp whatever $TMPDIR says: the daemon's and the kubelet emulator's unix sockets live in
// it (a socket's path holds at most 107 bytes).
class DraCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    root_ = tmp_.path();
  }
  void TearDown() override {
    if (HasFailure()) tmp_.Keep();
  }

  vgpu::testing::TempDir tmp_{"vgpu-dra-cli", "/tmp"};
  std::string root_;
};

TEST_F(DraCliTest, HelpAndBadFlags) {
  EXPECT_EQ(RunCommand(std::string(VGPU_BIN) + " dra --help").exit_code, 0);
  auto bad = RunCommand(std::string(VGPU_BIN) + " dra --sim --log-level 9");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--log-level"), std::string::npos) << bad.err;
  auto no_sim = RunCommand(std::string(VGPU_BIN) + " dra --sim-devices 2");
  EXPECT_EQ(no_sim.exit_code, 2);
  EXPECT_NE(no_sim.err.find("--sim-devices: needs --sim"), std::string::npos) << no_sim.err;
  const std::string dir = root_;
  std::ofstream(dir + "/modes.yaml") << "version: v1\ngpus:\n  - devices: all\n    mode: migs\n";
  auto modes = RunCommand(std::string(VGPU_BIN) + " dra --sim --gpu-modes " + dir + "/modes.yaml");
  EXPECT_EQ(modes.exit_code, 2);
  EXPECT_NE(modes.err.find("--gpu-modes: "), std::string::npos) << modes.err;
  EXPECT_NE(modes.err.find("migs"), std::string::npos) << modes.err;
  auto layout = RunCommand(std::string(VGPU_BIN) + " dra --sim --dry-run --slice-layout 1.33");
  EXPECT_EQ(layout.exit_code, 2);
  EXPECT_NE(layout.err.find("--slice-layout: \"1.33\" is not auto, 1.34 or 1.35"),
            std::string::npos)
      << layout.err;
  auto listen = RunCommand(std::string(VGPU_BIN) + " dra --sim --health-listen nowhere");
  EXPECT_EQ(listen.exit_code, 2);
  EXPECT_NE(listen.err.find("--health-listen: "), std::string::npos) << listen.err;
}

// What a node would publish, with no cluster: the slices (valid for the release asked), one CDI
// spec per whole GPU with the driver's own paths, a note for the MIG devices made at Prepare;
// nothing is written and no API server is asked.
TEST_F(DraCliTest, DryRunPrintsSlicesAndCdiSpecsAndTouchesNothing) {
  const std::string root = root_;
  std::ofstream(root + "/modes.yaml")
      << "version: v1\ngpus:\n  - devices: [1]\n    mode: mig-dynamic\n";
  for (const std::string layout : {"1.35", "1.34"}) {
    auto r = RunCommand("VGPU_SIMGPU_STATE=" + root + "/simstate VGPU_SIMGPU_LOG_LEVEL=1 " +
                        "KUBECONFIG=" + root + "/none " + VGPU_BIN +
                        " dra --dry-run --sim --sim-devices 2 --node-name dry-node --gpu-modes " +
                        root + "/modes.yaml --slice-layout " + layout + " --cdi-dir " + root +
                        "/cdi --state-dir " + root + "/state --libvgpu /opt/vgpu/libvgpu.so");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json out = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(out.is_object()) << r.out;
    EXPECT_EQ(out["layout"], layout);
    EXPECT_EQ(out["node"], "dry-node");
    std::vector<json> slices = out["resourceSlices"];
    EXPECT_EQ(testing::ValidateResourceSlices(slices, layout == "1.34" ? 34 : 35),
              std::vector<std::string>{})
        << layout;
    size_t devices = 0;
    for (const json& s : slices) devices += s["spec"].value("devices", json::array()).size();
    EXPECT_EQ(devices, 27u);  // gpu-0, gpu-1 and the 25 MIG placements of GPU 1 (an H100)
    ASSERT_EQ(out["cdiSpecs"].size(), 2u) << out.dump(2);
    for (int i = 0; i < 2; ++i) {
      const json& c = out["cdiSpecs"][i];
      EXPECT_EQ(c["device"], "gpu-" + std::to_string(i));
      EXPECT_EQ(c["path"], CdiSpecPath(root + "/cdi", "dry-run-gpu-" + std::to_string(i)));
      EXPECT_EQ(c["spec"]["cdiVersion"], "0.3.0");
      EXPECT_EQ(c["spec"]["kind"], kCdiKind);
      const std::string edits = c["spec"]["devices"][0]["containerEdits"].dump();
      EXPECT_NE(edits.find(root + "/state/slices/dry-run-gpu-" + std::to_string(i)),
                std::string::npos)
          << edits;
      EXPECT_NE(edits.find("/opt/vgpu/libvgpu.so"), std::string::npos) << edits;
    }
    ASSERT_EQ(out["notes"].size(), 1u) << out.dump(2);
    EXPECT_NE(out["notes"][0].get<std::string>().find("GPU 1: 25 MIG devices"), std::string::npos);
    EXPECT_FALSE(fs::exists(root + "/cdi"));
    EXPECT_FALSE(fs::exists(root + "/state"));
  }
}

// The API server's address and the whole reason are in the message, not a prefix of them.
TEST_F(DraCliTest, AnUnreachableApiServerIsNamedInFull) {
  const std::string root = root_;
  const int port = vgpu::testing::FreePort();
  ASSERT_GT(port, 0);
  const std::string server = "https://127.0.0.1:" + std::to_string(port);
  std::ofstream(root + "/kubeconfig")
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " << server
      << "\n    insecure-skip-tls-verify: true\ncontexts:\n- name: x\n  context:\n    cluster: c\n"
         "    user: u\ncurrent-context: x\nusers:\n- name: u\n  user:\n    token: t\n";
  fs::create_directories(root + "/registry");
  std::vector<std::string> args = {
      VGPU_BIN, "dra", "--sim", "--kubeconfig", root + "/kubeconfig", "--node-name", "far-node"};
  AppendDirectories(root, &args);
  args.insert(args.end(), {"--health-listen", "off"});
  BackgroundProcess daemon(args,
                           {"VGPU_SIMGPU_STATE=" + root + "/simstate", "VGPU_SIMGPU_LOG_LEVEL=1"},
                           root + "/dra.log");
  vgpu::testing::WaitFor(
      [&] { return daemon.Log().find("publishing ResourceSlices") != std::string::npos; },
      std::chrono::milliseconds(15'000), std::chrono::milliseconds(50));
  EXPECT_EQ(daemon.Stop(SIGTERM, std::chrono::seconds(10)), 0) << daemon.Log();
  const std::string log = daemon.Log();
  const size_t at = log.find("publishing ResourceSlices");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find(server), std::string::npos) << line;
  EXPECT_NE(line.find("cannot connect to 127.0.0.1:" + std::to_string(port) +
                      ": Connection refused (retried in 10000 ms)"),
            std::string::npos)
      << line;
}

TEST_F(DraCliTest, PublishesRegistersPreparesAndStops) {
  const std::string root = root_;
  fs::create_directories(root + "/registry");
  // GPU 1 offers MIG devices (every placement) beside its software device.
  std::ofstream(root + "/modes.yaml")
      << "version: v1\ngpus:\n  - devices: [1]\n    mode: mig-dynamic\n";
  k8s::testing::FakeApiServer api;
  const std::string kubeconfig = k8s::testing::WriteKubeconfig(api, root);
  const int health_port = vgpu::testing::FreePort();
  ASSERT_GT(health_port, 0);
  std::vector<std::string> args = {VGPU_BIN,       "dra",      "--sim",       "--sim-devices", "2",
                                   "--kubeconfig", kubeconfig, "--node-name", "cli-node"};
  AppendDirectories(root, &args);
  args.insert(args.end(), {"--gpu-modes", root + "/modes.yaml", "--sample-interval-ms", "200",
                           "--health-listen", "127.0.0.1:" + std::to_string(health_port)});
  BackgroundProcess daemon(args,
                           {"VGPU_SIMGPU_STATE=" + root + "/simstate", "VGPU_SIMGPU_LOG_LEVEL=1"},
                           root + "/dra.log");
  httplib::Client http("127.0.0.1", health_port);
  const auto get = [&http](const char* path) -> std::pair<int, std::string> {
    auto r = http.Get(path);
    return r ? std::pair<int, std::string>{r->status, r->body} : std::pair<int, std::string>{0, ""};
  };
  std::pair<int, std::string> ready;
  vgpu::testing::WaitFor(
      [&] {
        ready = get("/readyz");
        return ready.first != 0;
      },
      std::chrono::milliseconds(6000), std::chrono::milliseconds(20));
  // Up, but not registered with kubelet yet: live, not ready.
  EXPECT_EQ(ready, (std::pair<int, std::string>{503, "not registered with kubelet\n"}));
  EXPECT_EQ(get("/healthz").first, 200);
  vgpu::testing::DraKubeletEmulator kubelet(root + "/registry");
  kubelet.Start();
  ASSERT_TRUE(kubelet.WaitForRegistrations(1, 30'000)) << daemon.Log();
  vgpu::testing::WaitFor(
      [&] {
        ready = get("/readyz");
        return ready.first == 200;
      },
      std::chrono::milliseconds(6000), std::chrono::milliseconds(20));
  EXPECT_EQ(ready, (std::pair<int, std::string>{200, "ready\n"})) << daemon.Log();
  std::vector<json> slices;
  vgpu::testing::WaitFor(
      [&] {
        slices = api.ResourceSlices();
        return slices.size() >= 2;
      },
      std::chrono::milliseconds(6000), std::chrono::milliseconds(20));
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
  const std::string metrics = get("/metrics").second;
  EXPECT_NE(metrics.find("\nvgpu_dra_prepared_claims 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\nvgpu_dra_resourceslices_published 1\n"), std::string::npos) << metrics;

  EXPECT_EQ(daemon.Stop(SIGTERM, std::chrono::seconds(10)), 0) << daemon.Log();
  EXPECT_FALSE(fs::exists(root + "/registry/gpu.vgpu.io-reg.sock"));
  EXPECT_FALSE(fs::exists(root + "/plugin/dra.sock"));
  kubelet.Stop();
}

}  // namespace
}  // namespace vgpu::dra
