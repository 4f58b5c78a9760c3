// `vgpu scheduler` as a process: exit codes and messages for bad input, and a full run against
// the local HTTPS API server through a kubeconfig file: ready after loading the state, answers
// kube-scheduler's filter body, serves /metrics, stops cleanly on SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "harness.h"
#include "k8s/api/encoding.h"
#include "kubeconfig.h"
#include "support/background_process.h"
#include "support/run_command.h"
#include "support/temp_dir.h"
#include "support/wait_for.h"

namespace vgpu::k8s::testing {
namespace {

using namespace std::chrono_literals;
using vgpu::testing::BackgroundProcess;
using vgpu::testing::FreePort;
using vgpu::testing::RunCommand;

int HttpGet(int port, const std::string& path, std::string* body = nullptr) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(1, 0);
  auto r = cli.Get(path);
  if (!r) return 0;
  if (body != nullptr) *body = r->body;
  return r->status;
}

class SchedulerCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
  }
  vgpu::testing::TempDir tmp_{
      "vgpu-sched-cli-" +
      std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())};
  std::string dir_;
};

TEST_F(SchedulerCliTest, BadInputExitsTwoWithAMessage) {
  const std::string bin = VGPU_BIN;
  const struct {
    std::string args, message;
  } cases[] = {
      {"--policy nope", "--policy: unknown policy 'nope'"},
      {"--policy-option x", "--policy-option: expected key=value, got 'x'"},
      {"--policy bestfit --policy-option zzz=1", "zzz"},
      {"--resource-prefix Nvidia.com", "--resource-prefix: 'Nvidia.com' may hold only"},
      {"--default-gpumem-percentage 101", "--default-gpumem-percentage: must be 0..100, got 101"},
      {"--assume-ttl 10", "--assume-ttl"},
      {"--threads 0", "--threads: must be 1..4096, got 0"},
      {"--filter-mode best", "--filter-mode: must be narrow or all, got 'best'"},
      {"--narrow-tolerance 11", "--narrow-tolerance: must be 0..10, got 11"},
      {"--kubeconfig " + dir_ + "/missing", "kubeconfig: no such file"},
      {"--no-such-flag", "--no-such-flag"},
      {"--threads many", "--threads"},
  };
  for (const auto& c : cases) {
    auto r = RunCommand(bin + " scheduler " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
  WriteFile(dir_ + "/bad.yaml", "clusters: [oops\n");
  auto r = RunCommand(bin + " scheduler --kubeconfig " + dir_ + "/bad.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir_ + "/bad.yaml:"), std::string::npos) << r.err;
  auto help = RunCommand(bin + " scheduler --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--node-label-selector"), std::string::npos);
  EXPECT_NE(help.out.find("hami-binpack"), std::string::npos);
}

TEST_F(SchedulerCliTest, RunsAgainstAnApiServerAndStopsOnSigterm) {
  FakeApiServer api;
  for (const Json& n : Fixture("nodes.json")) api.PutNode(n);
  api.PutPod(Fixture("pod_train.json"));
  const int port = FreePort();
  const int metrics_port = FreePort();
  BackgroundProcess p({VGPU_BIN, "scheduler", "--kubeconfig", WriteKubeconfig(api, dir_),
                       "--listen", "127.0.0.1:" + std::to_string(port), "--metrics-listen",
                       "127.0.0.1:" + std::to_string(metrics_port), "--policy", "bestfit"},
                      {}, dir_ + "/log");
  const bool ready =
      vgpu::testing::WaitFor([&] { return HttpGet(port, "/readyz") == 200; }, 5000ms, 10ms);
  ASSERT_TRUE(ready) << ReadWholeFile(dir_ + "/log").value_or("");
  httplib::Client cli("127.0.0.1", port);
  auto f = cli.Post("/filter", Fixture("filter_node_names.json").dump(), "application/json");
  ASSERT_TRUE(f);
  // The default filter mode narrows the two equally good nodes to the engine's choice.
  const Json chosen = Json::parse(f->body)["NodeNames"];
  ASSERT_EQ(chosen.size(), 1u) << f->body;
  const std::string node = chosen[0];
  EXPECT_TRUE(node == "gpu-node-1" || node == "gpu-node-2") << node;
  Json bind = Fixture("bind.json");
  bind["Node"] = node;
  auto b = cli.Post("/bind", bind.dump(), "application/json");
  ASSERT_TRUE(b);
  EXPECT_EQ(Json::parse(b->body)["Error"], "");
  EXPECT_EQ(api.GetPod("ml", "train-0")["spec"]["nodeName"], node);
  std::string metrics;
  EXPECT_EQ(HttpGet(metrics_port, "/metrics", &metrics), 200);
  EXPECT_NE(metrics.find("\nvgpu_scheduler_ready 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("\nvgpu_scheduler_nodes 3\n"), std::string::npos);
  EXPECT_NE(metrics.find("vgpu_scheduler_binds_total{result=\"bound\"} 1"), std::string::npos);
  EXPECT_EQ(HttpGet(metrics_port, "/filter"), 404);  // the verbs are not on the metrics port
  EXPECT_EQ(p.Stop(SIGTERM, 10s), 0);
  const std::string log = ReadWholeFile(dir_ + "/log").value_or("");
  EXPECT_NE(log.find("ready"), std::string::npos) << log;
  EXPECT_NE(log.find("3 nodes, 20 GPUs"), std::string::npos) << log;
}

TEST_F(SchedulerCliTest, WaitsForAnUnreachableApiServerWithoutServingVerbs) {
  std::string config;
  {
    FakeApiServer api;  // gone once the block ends: its address refuses connections
    config = WriteKubeconfig(api, dir_);
  }
  const int port = FreePort();
  BackgroundProcess p({VGPU_BIN, "scheduler", "--kubeconfig", config, "--listen",
                       "127.0.0.1:" + std::to_string(port), "--metrics-listen", ""},
                      {}, dir_ + "/log");
  int health = 0;
  vgpu::testing::WaitFor(
      [&] {
        health = HttpGet(port, "/healthz");
        return health == 200;
      },
      3000ms, 10ms);
  EXPECT_EQ(health, 200);
  EXPECT_EQ(HttpGet(port, "/readyz"), 503);
  EXPECT_EQ(p.Stop(SIGTERM, 10s), 0);
  EXPECT_NE(ReadWholeFile(dir_ + "/log").value_or("").find("loading the cluster state"),
            std::string::npos);
}

TEST_F(SchedulerCliTest, AnAddressInUseIsAnError) {
  httplib::Server holder;
  const int port = holder.bind_to_any_port("127.0.0.1");
  std::thread t([&] { holder.listen_after_bind(); });
  FakeApiServer api;
  auto r =
      RunCommand(std::string(VGPU_BIN) + " scheduler --kubeconfig " + WriteKubeconfig(api, dir_) +
                 " --listen 127.0.0.1:" + std::to_string(port) + " --metrics-listen ''");
  holder.stop();
  t.join();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace vgpu::k8s::testing
