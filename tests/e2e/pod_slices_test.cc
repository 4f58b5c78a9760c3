// End to end on one node, on the simulated GPU: kubelet (the emulator of tests/node: a real
// gRPC Registration server and DevicePlugin client over unix sockets) drives `vgpu node --sim`
// through registration, GetPreferredAllocation and Allocate for pods that the scheduler placed
// on the same GPU with different limits (a: 1 GiB / 30 %, b: 2 GiB / 70 %; c and d: elastic
// with weights 1 and 3 from the vgpu.io/compute annotation). Each container is then started as a
// process with exactly the environment and mounts that Allocate returned (container_runtime.h),
// with libvgpu.so preloaded through the mounted /etc/ld.so.preload and the simulated GPU as its
// driver, and the test checks that:
//   - each container's memory limit is enforced at exactly its own limit (none swapped);
//   - two saturating containers get about 30 % and 70 % of the GPU (c and d: 25 % and 75 %, a
//     split that only the GPU's arbiter shared by both containers can make), measured from their
//     kernels' start and end times;
//   - the node's /metrics shows a's and b's slices with their limits, the memory they hold and
//     their achieved shares, and passes promtool (when it is installed);
//   - `vgpu top` lists the pods' slices with the same figures.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "child_process.h"
#include "container_runtime.h"
#include "e2e_util.h"
#include "kubelet_emulator.h"
#include "node/plugin/assignment.h"
#include "sanitizer_env.h"
#include "support/background_process.h"
#include "support/run_command.h"

namespace vgpu::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using vgpu::testing::BackgroundProcess;
using vgpu::testing::ChildProcess;
using vgpu::testing::FreePort;
using vgpu::testing::KubeletEmulator;
using vgpu::testing::RunCommand;
using vgpu::testing::RunToCompletion;

constexpr const char* kGpu = "GPU-e2e00000-1111-4222-8333-444444444444";
constexpr uint64_t kGiB = 1ULL << 30;

// The pods, all on the one GPU. a and b: capped at 30 and 70 % (nvidia.com/gpucores), run
// together. c and d: no cap, elastic with weights 1 and 3 (the vgpu.io/compute annotation), run
// together: the GPU's arbiter shares its time 25 / 75 only if both containers meet in it (alone,
// each would take what the simulated GPU's launch order gives it, about half).
struct PodCase {
  std::string name;
  uint64_t memory;      // nvidia.com/gpumem
  int cores;            // nvidia.com/gpucores
  int priority;         // nvidia.com/priority
  std::string compute;  // vgpu.io/compute ("": none)
  double share;         // expected share of the GPU, percent, with its partner saturating too
};
const PodCase kPods[] = {{"a", 1 * kGiB, 30, 1, "", 30},
                         {"b", 2 * kGiB, 70, 0, "", 70},
                         {"c", 1 * kGiB, 100, 1, "mode=elastic", 25},
                         {"d", 1 * kGiB, 100, 1, "mode=elastic,weight=3", 75}};

// How long the two compute containers run, and the part of it that is measured (the first
// second is left out: processes start and the arbiter converges).
constexpr uint64_t kRunNs = 4'500'000'000ULL;
constexpr uint64_t kMeasureFromNs = 1'000'000'000ULL;
// Generous: the simulated GPU's shares hold within 3 points on an idle machine.
constexpr double kShareTolerance = 8.0;

// The value of the series `name` whose labels contain pod="<pod>" (any labels when `pod` is
// empty), or -1.
double Series(const std::string& metrics, const std::string& name, const std::string& pod = "") {
  std::istringstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) != 0) continue;
    if (!pod.empty() && line.find("pod=\"" + pod + "\"") == std::string::npos) continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

class PodSlicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = "/tmp/vgpu-e2e-" + std::to_string(getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream(root_ + "/devices.conf") << "model=h100 memory=16GiB uuid=" << kGpu << "\n";
    // The scheduler extender's decisions, as annotations on the pods (node/plugin/assignment.h).
    json items = json::array();
    int second = 0;
    for (const PodCase& p : kPods) {
      node::PodAssignment a;
      a.node = "e2e-node";
      node::ContainerAssignment c;
      c.name = "main";
      c.priority = p.priority;
      c.devices.push_back({kGpu, 0, p.memory, p.cores});
      a.containers.push_back(c);
      ++second;
      json annotations = {{node::kAssignmentAnnotation, node::FormatAssignment(a)}};
      if (!p.compute.empty()) annotations["vgpu.io/compute"] = p.compute;
      items.push_back(PendingPod(p.name, second, annotations));
    }
    std::ofstream(root_ + "/pods.json") << json{{"items", items}}.dump();
    kubelet_ = std::make_unique<KubeletEmulator>(root_ + "/kubelet");
    ASSERT_TRUE(kubelet_->Start());
  }

  void TearDown() override {
    StopSimNode(daemon_.get());
    daemon_.reset();
    kubelet_.reset();
    if (!HasFailure()) fs::remove_all(root_);
  }

  // What the simulated GPU's container runtime adds to every container: its driver libraries
  // (found first on the library path, and by libvgpu.so as the real driver) and the shared
  // state of the simulated GPU, so that the containers and the daemon see the same device.
  std::vector<std::string> RuntimeEnv() const { return SimGpuRuntimeEnv(SIMGPU_DIR, root_); }

  std::vector<std::string> ContainerEnv(const ContainerSpec& c) const {
    return c.Environment(RuntimeEnv(), testing::kSanitizerRuntime);
  }

  void StartDaemon() {
    port_ = FreePort();
    const std::string port = "127.0.0.1:" + std::to_string(port_);
    daemon_ =
        StartSimNode({VGPU_BIN,
                      LIBVGPU_PATH,
                      root_,
                      kubelet_->pod_resources_socket(),
                      port,
                      10,
                      {"--sample-interval", "200ms", "--hami-metric-aliases", "--log-level", "2"}});
  }

  std::string Log() const { return "daemon log:\n" + ReadFile(root_ + "/daemon.log"); }

  std::string Metrics() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(10, 0);
    auto res = client.Get("/metrics");
    return res && res->status == 200 ? res->body : "";
  }

  // Starts a saturating `vgpu bench tenant` (1 ms kernels) in the container of each of `pods`,
  // runs them together for kRunNs, and calls `probe` while they run, once the arbiter's
  // one-second window has filled. Returns each one's share of [start + kMeasureFromNs,
  // start + kRunNs), percent, from its kernels' start and end times (empty on failure).
  std::map<std::string, double> RunTenants(std::map<std::string, ContainerSpec>& containers,
                                           const std::vector<std::string>& pods,
                                           const std::function<void()>& probe) {
    std::map<std::string, std::unique_ptr<ChildProcess>> tenants;
    for (const std::string& p : pods) {
      tenants[p] = std::make_unique<ChildProcess>(
          std::vector<std::string>{VGPU_BIN, "bench", "tenant", "--kernel-ns", "1000000", "--depth",
                                   "11", "--stop-ns", std::to_string(kRunNs), "--out",
                                   root_ + "/" + p + ".kernels"},
          ContainerEnv(containers[p]));
    }
    for (const std::string& p : pods) {
      if (tenants[p]->ReadLine(60'000) != "ready") {
        ADD_FAILURE() << "pod " << p << ": the tenant did not start";
        return {};
      }
    }
    const uint64_t start = MonotonicNs() + 300'000'000ULL;
    for (const std::string& p : pods) tenants[p]->Write(std::to_string(start) + "\n");
    const uint64_t probe_at = start + kRunNs - 1'800'000'000ULL;
    if (const uint64_t now = MonotonicNs(); now < probe_at) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(probe_at - now));
    }
    probe();
    std::map<std::string, double> shares;
    for (const std::string& p : pods) {
      if (tenants[p]->ReadLine(30'000) != "done") {
        ADD_FAILURE() << "pod " << p << ": the tenant did not finish";
        return {};
      }
      shares[p] = ShareOf(root_ + "/" + p + ".kernels", start + kMeasureFromNs, start + kRunNs);
    }
    for (auto& [name, child] : tenants) {
      child->CloseStdin();
      EXPECT_EQ(child->Wait(30'000), 0) << name;
    }
    return shares;
  }

  std::string root_;
  std::unique_ptr<KubeletEmulator> kubelet_;
  std::unique_ptr<BackgroundProcess> daemon_;
  int port_ = 0;
};

TEST_F(PodSlicesTest, PodsOnOneGpuGetTheirOwnMemoryAndComputeSlices) {
  const double t_begin = vgpu::testing::NowMs();
  StartDaemon();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, 30'000)) << Log();
  ASSERT_TRUE(kubelet_->WaitForDevices([](const auto& d) { return d.size() == 10; }, 10'000))
      << Log();

  // kubelet admits the pods in creation order: GetPreferredAllocation, then Allocate.
  std::vector<std::string> available;
  for (const auto& d : kubelet_->devices()) available.push_back(d.id());
  std::map<std::string, ContainerSpec> containers;
  for (const PodCase& p : kPods) {
    SCOPED_TRACE("pod " + p.name);
    std::vector<std::string> units;
    ASSERT_TRUE(kubelet_->GetPreferredAllocation(available, {}, 1, &units).ok()) << Log();
    ASSERT_EQ(units.size(), 1u);
    std::erase(available, units[0]);
    v1beta1::ContainerAllocateResponse r;
    grpc::Status s = kubelet_->Allocate("default", p.name, "main", units, &r);
    ASSERT_TRUE(s.ok()) << s.error_message() << Log();
    ContainerSpec c = ContainerSpec::FromAllocation(r);
    EXPECT_EQ(c.envs["VGPU_SLICE"], "default/" + p.name + "/main");
    EXPECT_EQ(c.envs["NVIDIA_VISIBLE_DEVICES"], kGpu);
    EXPECT_EQ(c.envs["CUDA_DEVICE_SM_LIMIT"], std::to_string(p.cores));
    EXPECT_EQ(c.envs["VGPU_PRIORITY"], p.priority == 0 ? "high" : "normal");
    // The read-only limits file, as the container reads it at /etc/vgpu/limits.
    const Mount* limits_mount = c.MountOf(c.envs["VGPU_LIMITS_FILE"]);
    ASSERT_NE(limits_mount, nullptr);
    EXPECT_TRUE(limits_mount->read_only);
    const std::string limits = ReadFile(c.HostPath(c.envs["VGPU_LIMITS_FILE"]));
    for (const std::string& line :
         {"uuid.0=" + std::string(kGpu), "memory.0=" + std::to_string(p.memory),
          "cores.0=" + std::to_string(p.cores),
          std::string("priority=") + (p.priority == 0 ? "high" : "normal"),
          "arbiter_dir=" + root_ + "/arbiter", std::string("context_overhead=0")}) {
      EXPECT_NE(limits.find("\n" + line + "\n"), std::string::npos) << line << " in\n" << limits;
    }
    // The vgpu.io/compute settings, one line each.
    std::istringstream settings(p.compute);
    for (std::string kv; std::getline(settings, kv, ',');) {
      EXPECT_NE(limits.find("\n" + kv + "\n"), std::string::npos) << kv << " in\n" << limits;
    }
    // The region's directory and the node's arbiter directory, read-write at their host paths
    // (libvgpu names a slice in the arbiter by its region's path).
    const Mount* arbiter = c.MountOf(root_ + "/arbiter");
    ASSERT_NE(arbiter, nullptr);
    EXPECT_FALSE(arbiter->read_only);
    EXPECT_EQ(arbiter->host_path, arbiter->container_path);
    const std::string region = c.envs["CUDA_DEVICE_MEMORY_SHARED_CACHE"];
    const Mount* region_dir = c.MountOf(region);
    ASSERT_NE(region_dir, nullptr);
    EXPECT_FALSE(region_dir->read_only);
    EXPECT_EQ(c.HostPath(region), region);
    EXPECT_NE(region.find("/default_" + p.name + "_main/"), std::string::npos) << region;
    containers[p.name] = std::move(c);
  }
  ASSERT_EQ(containers.size(), std::size(kPods));
  EXPECT_NE(containers["a"].envs["CUDA_DEVICE_MEMORY_SHARED_CACHE"],
            containers["b"].envs["CUDA_DEVICE_MEMORY_SHARED_CACHE"]);

  // Memory: each container holds exactly its own limit, not one byte more; a's limit is not b's.
  for (const PodCase& p : kPods) {
    SCOPED_TRACE("pod " + p.name);
    int code = -1;
    std::string out = RunToCompletion({WORKER_PATH, "fill", "alloc", std::to_string(p.memory)},
                                      ContainerEnv(containers[p.name]), &code);
    EXPECT_EQ(code, 0) << out;
    auto lines = Lines(out);
    EXPECT_EQ(lines["first"], "CUDA_SUCCESS") << out;
    EXPECT_EQ(lines["extra"], "CUDA_ERROR_OUT_OF_MEMORY") << out;
  }
  {
    int code = -1;
    std::string out = RunToCompletion({WORKER_PATH, "fill", "alloc", std::to_string(2 * kGiB)},
                                      ContainerEnv(containers["a"]), &code);
    EXPECT_EQ(Lines(out)["first"], "CUDA_ERROR_OUT_OF_MEMORY") << "a got b's limit: " << out;
  }

  // Compute, a and b: both saturate the GPU with 1 ms kernels; each also holds some memory.
  std::map<std::string, std::unique_ptr<ChildProcess>> holders;
  for (const PodCase& p : {kPods[0], kPods[1]}) {
    holders[p.name] = std::make_unique<ChildProcess>(
        std::vector<std::string>{WORKER_PATH, "hold", std::to_string(p.memory / 2)},
        ContainerEnv(containers[p.name]));
    ASSERT_EQ(holders[p.name]->ReadLine(60'000).rfind("ready", 0), 0u) << "pod " << p.name;
  }
  // While they run: /metrics and `vgpu top`.
  std::string metrics;
  testing::CommandResult top_json, top_text;
  const std::string top_env = "VGPU_SIMGPU_CONFIG=" + root_ +
                              "/devices.conf VGPU_SIMGPU_STATE=" + root_ +
                              "/simgpu.state VGPU_SIMGPU_LOG_LEVEL=0 ";
  const std::string top_cmd = top_env + VGPU_BIN + " top --once --sim --state-dir " + root_ +
                              "/run-state --slice-dir " + root_ + "/slices";
  std::map<std::string, double> shares = RunTenants(containers, {"a", "b"}, [&] {
    metrics = Metrics();
    top_json = RunCommand(top_cmd + " --json");
    top_text = RunCommand(top_cmd);
  });
  for (auto& [name, child] : holders) {
    child->CloseStdin();
    EXPECT_EQ(child->Wait(30'000), 0) << name;
  }
  // Then c and d (elastic, weights 1 and 3) on the same arbiter, after a and b have left it.
  for (const auto& [pod, share] : RunTenants(containers, {"c", "d"}, [] {})) shares[pod] = share;
  ASSERT_EQ(shares.size(), 4u);
  std::printf(
      "e2e: achieved shares a %.1f%% (target 30), b %.1f%% (target 70); c %.1f%% (weight 1, "
      "target 25), d %.1f%% (weight 3, target 75)\n",
      shares["a"], shares["b"], shares["c"], shares["d"]);
  for (const PodCase& p : kPods) {
    EXPECT_NEAR(shares[p.name], p.share, kShareTolerance) << "pod " << p.name;
  }

  // /metrics while a and b ran: their limits, the memory they held and the shares the arbiter
  // measured.
  ASSERT_FALSE(metrics.empty()) << Log();
  for (const PodCase& p : {kPods[0], kPods[1]}) {
    SCOPED_TRACE("pod " + p.name);
    EXPECT_EQ(Series(metrics, "vgpu_slice_memory_limit_bytes", p.name),
              static_cast<double>(p.memory));
    EXPECT_DOUBLE_EQ(Series(metrics, "vgpu_slice_compute_limit_ratio", p.name), p.cores / 100.0);
    const double charged = Series(metrics, "vgpu_slice_memory_charged_bytes", p.name);
    EXPECT_GE(charged, static_cast<double>(p.memory / 2));
    EXPECT_LE(charged, static_cast<double>(p.memory));
    const double achieved = Series(metrics, "vgpu_slice_compute_achieved_ratio", p.name);
    std::printf("e2e: /metrics pod %s achieved %.3f, charged %.0f bytes\n", p.name.c_str(),
                achieved, charged);
    EXPECT_NEAR(achieved * 100, p.cores, kShareTolerance + 2);
    EXPECT_NEAR(Series(metrics, "hami_container_device_utilization_ratio", p.name), achieved * 100,
                1e-6);
    EXPECT_EQ(Series(metrics, "hami_vgpu_core_allocated_ratio", p.name), p.cores);
    EXPECT_GT(Series(metrics, "vgpu_slice_kernels_total", p.name), 100);
  }
  // Both slices are in the same GPU's arbiter, and it gave out turns.
  EXPECT_EQ(Series(metrics, "vgpu_gpu_compute_arbitrated_slices"), 2) << metrics;
  EXPECT_GT(Series(metrics, "vgpu_gpu_compute_turns_total"), 0);
  EXPECT_NEAR(Series(metrics, "vgpu_gpu_compute_achieved_ratio"), 1.0, 0.1);
  int cores_allocated = 0;
  for (const PodCase& p : kPods) cores_allocated += p.cores;
  EXPECT_EQ(Series(metrics, "hami_gpu_core_allocated_ratio"), cores_allocated);
  if (RunCommand("command -v promtool").exit_code == 0) {
    std::ofstream(root_ + "/metrics.prom") << metrics;
    testing::CommandResult promtool =
        RunCommand("promtool check metrics < " + root_ + "/metrics.prom");
    EXPECT_EQ(promtool.exit_code, 0) << promtool.out << promtool.err;
  }

  // vgpu top: the GPU (through the DeviceBackend) and the pods' slices; a and b running.
  ASSERT_EQ(top_json.exit_code, 0) << top_json.err;
  json top = json::parse(top_json.out, nullptr, false);
  ASSERT_FALSE(top.is_discarded()) << top_json.out;
  ASSERT_EQ(top["gpus"].size(), 1u) << top_json.out;
  EXPECT_EQ(top["gpus"][0]["uuid"], kGpu);
  std::map<std::string, json> listed;
  for (const json& s : top["slices"]) {
    if (s.value("kind", "") == "pod") listed[s["pod"]["name"]] = s;
  }
  ASSERT_EQ(listed.size(), std::size(kPods)) << top_json.out;
  for (const PodCase& p : kPods) {
    EXPECT_EQ(listed[p.name]["devices"][0]["memory_limit"].get<uint64_t>(), p.memory) << p.name;
  }
  for (const PodCase& p : {kPods[0], kPods[1]}) {
    SCOPED_TRACE("pod " + p.name);
    const json& dev = listed[p.name]["devices"][0];
    EXPECT_EQ(dev["uuid"], kGpu);
    EXPECT_EQ(dev["memory_limit"].get<uint64_t>(), p.memory);
    EXPECT_GE(dev["memory_used"].get<uint64_t>(), p.memory / 2);
    EXPECT_EQ(dev["cores"].get<int>(), p.cores);
    ASSERT_TRUE(dev["compute"].is_object()) << dev.dump();
    EXPECT_EQ(dev["compute"]["max"].get<int>(), p.cores);
    EXPECT_NEAR(dev["compute"]["achieved_pct"].get<double>(), p.cores, kShareTolerance + 2);
  }
  std::printf("e2e: vgpu top --once:\n%s", top_text.out.c_str());
  EXPECT_EQ(top_text.exit_code, 0) << top_text.err;
  EXPECT_NE(top_text.out.find("SLICE default/a/main"), std::string::npos) << top_text.out;
  EXPECT_NE(top_text.out.find("SLICE default/b/main"), std::string::npos) << top_text.out;
  std::printf("e2e: whole test %.1f s\n", (vgpu::testing::NowMs() - t_begin) / 1000);
}

}  // namespace
}  // namespace vgpu::e2e
