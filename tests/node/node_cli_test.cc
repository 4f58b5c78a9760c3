// `vgpu node` as a process: the simulated GPU (--sim, NVML through src/simgpu), a kubelet
// emulator in this test, pods from a --pods-file, fault injection over /sim/health, /metrics
// through promtool, and a clean exit on SIGTERM. Then the command's bad-input errors (exit 2).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "kubelet_emulator.h"
#include "node/plugin/assignment.h"
#include "support/background_process.h"
#include "support/run_command.h"
#include "support/wait_for.h"

namespace vgpu::node {
namespace {

namespace fs = std::filesystem;
using vgpu::testing::BackgroundProcess;
using vgpu::testing::FreePort;
using vgpu::testing::KubeletEmulator;
using vgpu::testing::RunCommand;

constexpr const char* kGpu0 = "GPU-11111111-2222-4333-8444-555555555555";
constexpr const char* kGpu1 = "GPU-66666666-7777-4888-8999-aaaaaaaaaaaa";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class NodeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = "/tmp/vgpu-cli-" + std::to_string(getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream(root_ + "/devices.conf")
        << "model=h100 uuid=" << kGpu0 << "\nmodel=a100 memory=40GiB uuid=" << kGpu1 << "\n";
    PodAssignment a;
    ContainerAssignment c;
    c.name = "train";
    c.priority = 0;
    c.devices.push_back({kGpu1, 1, 6ULL << 30, 25});
    a.containers.push_back(c);
    nlohmann_pods_ = R"({"items": [{"metadata": {"name": "trainer", "namespace": "ml",
        "uid": "0b1c2d3e-0000-4000-8000-000000000001", "creationTimestamp": "2025-01-01T00:00:00Z",
        "annotations": {"vgpu.io/assigned-gpus": )" +
                     Quote(FormatAssignment(a)) +
                     R"(}}, "spec": {"nodeName": "sim-node"}, "status": {"phase": "Pending"}}]})";
    std::ofstream(root_ + "/pods.json") << nlohmann_pods_;
    kubelet_ = std::make_unique<KubeletEmulator>(root_ + "/kubelet");
    ASSERT_TRUE(kubelet_->Start());
  }

  void TearDown() override {
    if (daemon_) daemon_->Stop(SIGKILL, std::chrono::seconds(10));
    daemon_.reset();
    kubelet_.reset();
    fs::remove_all(root_);
  }

  static std::string Quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  }

  void StartDaemon() {
    port_ = FreePort();
    const std::vector<std::string> args = {VGPU_BIN,
                                           "node",
                                           "--sim",
                                           "--sim-config",
                                           root_ + "/devices.conf",
                                           "--kubelet-dir",
                                           root_ + "/kubelet",
                                           "--slice-dir",
                                           root_ + "/slices",
                                           "--arbiter-dir",
                                           root_ + "/arbiter",
                                           "--node-name",
                                           "sim-node",
                                           "--pods-file",
                                           root_ + "/pods.json",
                                           "--metrics-listen",
                                           "127.0.0.1:" + std::to_string(port_),
                                           "--units-per-gpu",
                                           "4",
                                           "--sample-interval",
                                           "100ms",
                                           "--health-recovery",
                                           "1s",
                                           "--kernel-deadline",
                                           "300ms",
                                           "--hami-metric-aliases"};
    daemon_ = std::make_unique<BackgroundProcess>(
        args,
        std::vector<std::string>{"VGPU_SIMGPU_STATE=" + root_ + "/simstate",
                                 "VGPU_SIMGPU_LOG_LEVEL=1"},
        root_ + "/daemon.log");
  }

  std::string Post(const std::string& query) {
    httplib::Client client("127.0.0.1", port_);
    // As `curl -d 'gpu=0&event=xid&code=79' http://.../sim/health` sends it.
    auto res = client.Post("/sim/health", query, "application/x-www-form-urlencoded");
    return res ? std::to_string(res->status) + " " + res->body
               : "no answer: " + httplib::to_string(res.error());
  }

  bool GpuHealth(const std::vector<v1beta1::Device>& devices, const std::string& uuid,
                 const std::string& want) {
    int n = 0;
    for (const auto& d : devices) {
      if (d.id().rfind(uuid + "-", 0) == 0) {
        if (d.health() != want) return false;
        ++n;
      }
    }
    return n == 4;
  }

  std::string root_;
  std::string nlohmann_pods_;
  std::unique_ptr<KubeletEmulator> kubelet_;
  std::unique_ptr<BackgroundProcess> daemon_;
  int port_ = 0;
};

TEST_F(NodeCliTest, SimulatedNodeEndToEnd) {
  StartDaemon();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, 20'000)) << ReadFile(root_ + "/daemon.log");
  ASSERT_TRUE(kubelet_->WaitForDevices([](const auto& d) { return d.size() == 8; }, 5000));

  // The pod's container gets its slice on the A100.
  std::vector<std::string> available;
  for (const auto& d : kubelet_->devices()) available.push_back(d.id());
  std::vector<std::string> units;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(available, {}, 1, &units).ok());
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0], std::string(kGpu1) + "-0");
  v1beta1::ContainerAllocateResponse r;
  grpc::Status s = kubelet_->Allocate(units, &r);
  ASSERT_TRUE(s.ok()) << s.error_message() << ReadFile(root_ + "/daemon.log");
  EXPECT_EQ(r.envs().at("NVIDIA_VISIBLE_DEVICES"), kGpu1);
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), "6144m");
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_SM_LIMIT"), "25");
  EXPECT_EQ(r.envs().at("CUDA_TASK_PRIORITY"), "0");
  const std::string limits =
      ReadFile(root_ + "/slices/0b1c2d3e-0000-4000-8000-000000000001_train/limits");
  EXPECT_NE(limits.find("cores.0=25\npriority=high\narbiter_dir=" + root_ + "/arbiter\n"),
            std::string::npos)
      << limits;
  EXPECT_EQ(r.envs().at("VGPU_ARBITER_DIR"), root_ + "/arbiter");
  // The daemon created the arbiter of each GPU.
  EXPECT_TRUE(fs::exists(root_ + "/arbiter/" + std::string(kGpu1) + ".arbiter"));

  // Faults injected on the simulated GPU reach kubelet, and clear: a reset-class XID is
  // followed by a (simulated) reset, a probe and a second of probation.
  ASSERT_EQ(Post("gpu=0&event=xid&code=109"), "200 injected\n") << ReadFile(root_ + "/daemon.log");
  ASSERT_TRUE(kubelet_->WaitForDevices(
      [&](const auto& d) { return GpuHealth(d, kGpu0, "Unhealthy"); }, 5000));
  ASSERT_TRUE(kubelet_->WaitForDevices(
      [&](const auto& d) { return GpuHealth(d, kGpu0, "Healthy"); }, 10'000));
  // Application XIDs naming a process leave the GPU alone. One naming a MIG instance on a GPU
  // without MIG is refused: no phantom instance that a recovery of the GPU cannot clear.
  EXPECT_EQ(Post("gpu=0&event=xid&code=13&pid=4242"), "200 injected\n");
  EXPECT_EQ(Post("gpu=0&event=xid&code=95&gi=1&ci=0"),
            "400 gi=1&ci=0: GPU 0 is in mode shared, it has no MIG instances\n");
  EXPECT_EQ(Post("gpu=0&event=xid&code=95&gi=1").substr(0, 3), "400");  // ci is missing
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(GpuHealth(kubelet_->devices(), kGpu0, "Healthy"));
  {
    auto m = httplib::Client("127.0.0.1", port_).Get("/metrics");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->body.find("mig_instance=\"gi1/ci0\""), std::string::npos);
  }
  // The driver's recovery action: a reboot is needed, then none again.
  EXPECT_EQ(Post("gpu=0&event=recovery-action&code=2"), "200 injected\n");
  ASSERT_TRUE(kubelet_->WaitForDevices(
      [&](const auto& d) { return GpuHealth(d, kGpu0, "Unhealthy"); }, 5000));
  EXPECT_EQ(Post("gpu=0&event=recovery-action&code=0"), "200 injected\n");
  ASSERT_TRUE(kubelet_->WaitForDevices(
      [&](const auto& d) { return GpuHealth(d, kGpu0, "Healthy"); }, 10'000));
  // A reboot-class XID (fallen off the bus) stays until a recovery is reported.
  EXPECT_EQ(Post(std::string("gpu=") + kGpu1 + "&event=xid&code=79"), "200 injected\n");
  ASSERT_TRUE(kubelet_->WaitForDevices(
      [&](const auto& d) { return GpuHealth(d, kGpu1, "Unhealthy"); }, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_TRUE(GpuHealth(kubelet_->devices(), kGpu1, "Unhealthy"));
  EXPECT_EQ(Post("gpu=1&event=recovered"), "200 injected\n");
  ASSERT_TRUE(kubelet_->WaitForDevices(
      [&](const auto& d) { return GpuHealth(d, kGpu1, "Healthy"); }, 5000));
  // A GPU that stops answering.
  EXPECT_EQ(Post("gpu=0&event=lost"), "200 injected\n");
  ASSERT_TRUE(kubelet_->WaitForDevices(
      [&](const auto& d) { return GpuHealth(d, kGpu0, "Unhealthy"); }, 5000));
  EXPECT_EQ(Post("gpu=0&event=found"), "200 injected\n");
  ASSERT_TRUE(kubelet_->WaitForDevices(
      [&](const auto& d) { return GpuHealth(d, kGpu0, "Healthy"); }, 10'000));
  // A stuck kernel (docs/faults.md): armed for the next kernel of pid 4242, then cleared.
  EXPECT_EQ(Post("gpu=0&event=stuck-kernel&pid=4242"), "200 injected\n");
  EXPECT_EQ(Post("gpu=0&event=unstuck"), "200 injected\n");
  EXPECT_EQ(Post("gpu=0&event=unstuck").substr(0, 3), "400");  // nothing stuck or armed
  // Armed for any process: the first kernel of a driver API program (1 ms kernels, each
  // synchronized, for 1 s) never ends. Past --kernel-deadline (300 ms) the GPU is suspect and
  // still placed; cleared, the kernel ends and the program finishes.
  ASSERT_EQ(Post("gpu=0&event=stuck-kernel"), "200 injected\n");
  BackgroundProcess worker(
      {SIMGPU_WORKER, "launch", "1000000", "1000"},
      {"VGPU_SIMGPU_STATE=" + root_ + "/simstate", "VGPU_SIMGPU_LOG_LEVEL=1",
       "VGPU_SIMGPU_CONFIG=" + root_ + "/devices.conf", "CUDA_VISIBLE_DEVICES=0"},
      root_ + "/worker.log");
  const std::string suspect = "vgpu_gpu_health_state{node=\"sim-node\",uuid=\"" +
                              std::string(kGpu0) + "\",mig_instance=\"\",state=\"suspect\"} 1";
  const bool is_suspect = vgpu::testing::WaitFor(
      [&] {
        auto m = httplib::Client("127.0.0.1", port_).Get("/metrics");
        return m && m->body.find(suspect) != std::string::npos;
      },
      std::chrono::seconds(5), std::chrono::milliseconds(100));
  EXPECT_TRUE(is_suspect) << ReadFile(root_ + "/daemon.log");
  EXPECT_TRUE(GpuHealth(kubelet_->devices(), kGpu0, "Healthy"));
  EXPECT_TRUE(worker.Running()) << worker.Log();
  EXPECT_NE(ReadFile(root_ + "/daemon.log").find("has run for"), std::string::npos);
  EXPECT_EQ(Post("gpu=0&event=unstuck"), "200 injected\n");
  EXPECT_EQ(worker.Stop(0, std::chrono::seconds(10)), 0) << worker.Log();
  EXPECT_NE(worker.Log().find("done "), std::string::npos) << worker.Log();
  EXPECT_EQ(Post("gpu=7&event=xid&code=1").substr(0, 3), "400");
  EXPECT_EQ(Post("gpu=0&event=melt").substr(0, 3), "400");
  EXPECT_EQ(Post("gpu=0&event=xid&code=abc").substr(0, 3), "400");
  EXPECT_EQ(Post("gpu=0&event=xid&code=13&pid=x").substr(0, 3), "400");
  EXPECT_EQ(Post("gpu=0&event=recovery-action&code=9").substr(0, 3), "400");

  // /metrics passes promtool; the slice shows up with its limit.
  httplib::Client client("127.0.0.1", port_);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_NE(metrics->get_header_value("Content-Type").find("version=0.0.4"), std::string::npos);
  EXPECT_NE(metrics->body.find("vgpu_slice_memory_limit_bytes{node=\"sim-node\",namespace=\"ml\","
                               "pod=\"trainer\",container=\"train\",gpu=\"1\""),
            std::string::npos);
  EXPECT_NE(metrics->body.find("vgpu_gpu_temperature_celsius{"), std::string::npos);
  EXPECT_NE(metrics->body.find("hami_host_gpu_memory_used_bytes{"), std::string::npos);
  std::ofstream(root_ + "/metrics.txt") << metrics->body;
  EXPECT_EQ(std::system(("promtool check metrics < " + root_ + "/metrics.txt > " + root_ +
                         "/promtool.out 2>&1")
                            .c_str()),
            0)
      << ReadFile(root_ + "/promtool.out");
  auto ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);

  // SIGTERM: a clean exit, the plugin socket removed, the stream closed.
  auto start = std::chrono::steady_clock::now();
  const int code = daemon_->Stop(SIGTERM, std::chrono::seconds(5));
  ASSERT_TRUE(code >= 0 && code < 128) << code << "\n" << ReadFile(root_ + "/daemon.log");
  EXPECT_EQ(code, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(fs::exists(root_ + "/kubelet/vgpu.sock"));
  EXPECT_NE(ReadFile(root_ + "/daemon.log").find("SIGTERM: shutting down"), std::string::npos);
}

struct BadFlag {
  const char* args;
  const char* message;
};

TEST(NodeCliErrorsTest, BadInputExitsWithTwo) {
  const std::string bin = VGPU_BIN;
  const BadFlag cases[] = {
      {"--units-per-gpu 0", "--units-per-gpu: must be 1..1000, got 0"},
      {"--units-per-gpu 5000", "--units-per-gpu: must be 1..1000"},
      {"--resource-name gpu", "--resource-name: \"gpu\" is not <domain>/<name>"},
      {"--resource-name nvidia.com/g*u", "has the character '*' at position 13"},
      {"--kubelet-dir relative/dir", "--kubelet-dir: must be an absolute path"},
      {"--slice-dir x", "--slice-dir: must be an absolute path"},
      {"--arbiter-dir run/arb", "--arbiter-dir: must be an absolute path"},
      {"--compute-arbitration some", "--compute-arbitration: must be 'all' or 'limited'"},
      {"--endpoint kubelet.sock", "--endpoint: must be a plain file name"},
      {"--health-recovery 5parsecs", "--health-recovery"},
      {"--kernel-deadline -1s", "--kernel-deadline"},
      {"--kernel-deadline 700000s", "--kernel-deadline: \"700000s\" is outside"},
      {"--tenant-levels stuck-kernel-weight=101", "stuck-kernel-weight: 101 is out of range"},
      {"--health-ignore-xids 13,x", "--health-ignore-xids: \"x\" is not an XID number"},
      {"--sample-interval 1ns", "--sample-interval: \"1ns\" is outside"},
      {"--metrics-listen localhost", "--metrics-listen: \"localhost\" is not host:port"},
      {"--metrics-listen :99999", "--metrics-listen"},
      {"--sim-config /nonexistent.conf", "--sim-config: needs --sim"},
      {"--sim --sim-config /nonexistent.conf", "--sim-config: no such file: /nonexistent.conf"},
      {"--pods-file /nonexistent.json", "--pods-file: no such file"},
      {"--log-level 9", "--log-level: must be 0..4"},
      {"--pod-resources-socket rel.sock", "--pod-resources-socket: must be an absolute path"},
      {"--units-per-gpu many", "--units-per-gpu"},
      {"--no-such-flag", "no-such-flag"},
      {"--device-list-strategy volume-mounts",
       "--device-list-strategy: \"volume-mounts\" is not one of envvar, cdi-annotations, cdi-cri"},
      {"--cdi-kind gpu", "--cdi-kind: \"gpu\" is not <vendor>/<class>"},
      {"--tenant-levels limit-share=0",
       "--tenant-levels: limit-share: 0 % is out of range 1..99 %"},
      {"--tenant-levels warn=4,limit=2", "--tenant-levels: limit: 2 is out of range 5..1000"},
      {"--tenant-levels quiet=forever", "--tenant-levels: quiet"},
      {"--tenant-levels speed=3", "--tenant-levels: \"speed\" is not a field"},
      {"--rules /nonexistent/rules.yaml", "--rules: "},
      {"--rules-dry-run", "--rules-dry-run: needs --rules FILE"},
      {"--analyze-step 30s", "--analyze-step: needs --analyze"},
      {"--analyze --analyze-step 10ms", "--analyze-step: \"10ms\" is outside"},
      {"--analyze --analyze-step soon", "--analyze-step"},
  };
  for (const BadFlag& c : cases) {
    auto r = RunCommand(bin + " node --node-name n " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
  // A malformed rule file: file, line and column.
  const std::string rules = "/tmp/vgpu-node-rules-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(rules) << "rules:\n  - name: a\n    when:\n      - {signal: l2_hit, above: 1}\n"
                          "    action: alert\n";
  auto bad_rules = RunCommand(bin + " node --node-name n --rules " + rules);
  EXPECT_EQ(bad_rules.exit_code, 2) << bad_rules.err;
  EXPECT_NE(bad_rules.err.find("--rules: " + rules + ":4:"), std::string::npos) << bad_rules.err;
  // The analyses' step may not be shorter than the rounds that feed them.
  std::ofstream(rules) << "evaluation_interval: 30s\nrules: []\n";
  auto short_step =
      RunCommand(bin + " node --node-name n --rules " + rules + " --analyze --analyze-step 10s");
  EXPECT_EQ(short_step.exit_code, 2) << short_step.err;
  EXPECT_NE(short_step.err.find("--analyze-step: \"10s\" is shorter than the evaluation_interval"),
            std::string::npos)
      << short_step.err;
  std::remove(rules.c_str());
  auto help = RunCommand(bin + " node --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--rules-dry-run"), std::string::npos);
  EXPECT_NE(help.out.find("--analyze-step"), std::string::npos);
  EXPECT_NE(help.out.find("--units-per-gpu"), std::string::npos);
  EXPECT_NE(help.out.find("--hami-metric-aliases"), std::string::npos);
  // A machine without NVML: a clear failure, exit 1.
  auto no_gpu = RunCommand(bin +
                           " node --node-name n --nvml-library /nonexistent/libnvidia-ml.so.1"
                           " --kubelet-dir /tmp/vgpu-nogpu-kd --slice-dir /tmp/vgpu-nogpu-sl"
                           " --arbiter-dir /tmp/vgpu-nogpu-arb");
  EXPECT_EQ(no_gpu.exit_code, 1) << no_gpu.err;
  EXPECT_NE(no_gpu.err.find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << no_gpu.err;
}

// --print-metrics prints one scrape and creates nothing: no slice, arbiter or kubelet
// directory, no ld.so.preload, no plugin socket (a temporary root stays empty).
TEST(NodeCliMetricsTest, PrintMetricsPassesPromtoolAndCreatesNothing) {
  const std::string dir = "/tmp/vgpu-pm-" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir + "/root");
  const std::string root = dir + "/root";
  auto r = RunCommand("VGPU_SIMGPU_STATE=" + dir + "/state VGPU_SIMGPU_LOG_LEVEL=0 " +
                      std::string(VGPU_BIN) + " node --sim --sim-devices 3 --node-name n " +
                      "--kubelet-dir " + root + "/kd --slice-dir " + root + "/sl --arbiter-dir " +
                      root + "/arb --pod-resources-socket " + root + "/pr.sock" +
                      " --print-metrics --hami-metric-aliases --log-level 1 > " + dir +
                      "/m.prom && promtool check metrics < " + dir + "/m.prom");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string text = ReadFile(dir + "/m.prom");
  EXPECT_NE(text.find("vgpu_gpu_info{node=\"n\",gpu=\"2\""), std::string::npos);
  EXPECT_NE(text.find("hami_host_gpu_memory_used_bytes{node=\"n\",device_index=\"2\""),
            std::string::npos);
  std::vector<std::string> created;
  for (const auto& e : fs::recursive_directory_iterator(root)) created.push_back(e.path());
  EXPECT_TRUE(created.empty()) << created.front();
  // No arbiter was created, so there are no arbiter series.
  EXPECT_EQ(text.find("vgpu_gpu_compute_turns_total"), std::string::npos);
  fs::remove_all(dir);
}

// Without --sim, the daemon loads libnvidia-ml.so.1 by name: pointed at build/lib/simgpu with
// LD_LIBRARY_PATH, it runs on the simulated GPU like on a driver.
TEST(NodeCliMetricsTest, FindsNvmlThroughTheLibraryPath) {
  const std::string dir = "/tmp/vgpu-ld-" + std::to_string(getpid());
  const std::string simgpu = fs::path(VGPU_SIMGPU_NVML).parent_path().string();
  auto r =
      RunCommand("LD_LIBRARY_PATH=" + simgpu + " VGPU_SIMGPU_DEVICES=2 VGPU_SIMGPU_STATE=" + dir +
                 "-state VGPU_SIMGPU_LOG_LEVEL=0 " + std::string(VGPU_BIN) +
                 " node --node-name n --kubelet-dir " + dir + "/kd --slice-dir " + dir +
                 "/sl --arbiter-dir " + dir + "/arb --print-metrics --log-level 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vgpu_gpu_info{node=\"n\",gpu=\"1\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vgpu_gpu_multiprocessors{node=\"n\",gpu=\"0\""), std::string::npos);
  fs::remove_all(dir);
  fs::remove(dir + "-state");
}

}  // namespace
}  // namespace vgpu::node
