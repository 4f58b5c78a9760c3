// MIG on demand through the scheduler and the node, on one machine: `vgpu node --sim` with an
// H200 in mode mig-dynamic publishes its inventory to the local API server of tests/k8s; a real
// `vgpu scheduler` is asked filter, prioritize and bind (as kube-scheduler asks) for HAMi-style
// pods of 10, 30 and 69 GiB (nvidia.com/gpu: 1 + gpumem), all bound before the node has made any
// instance, so the scheduler must count the instances it assigned itself. They get 1g.18gb,
// 1g.35gb and 3g.71gb without overlap; a fourth 69 GiB pod finds no room, with the reason. kubelet
// (the emulator of tests/node) admits the three pods: Allocate creates exactly the assigned
// instances, and a process in each container (simgpu_worker with the container's visible
// device) sees one device with exactly the instance's memory and cannot allocate one byte more;
// the container's own limit is the pod's gpumem. When the pods are deleted the instances are
// destroyed. About 3 s.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "child_process.h"
#include "e2e_util.h"
#include "fake_api_server.h"
#include "harness.h"
#include "kube_manifests.h"
#include "kubeconfig.h"
#include "kubelet_emulator.h"
#include "mig/layout.h"
#include "mig/profiles.h"
#include "node/plugin/assignment.h"
#include "support/background_process.h"

namespace vgpu::e2e {
namespace {

namespace fs = std::filesystem;
using k8s::testing::FakeApiServer;
using Json = nlohmann::json;
using vgpu::testing::BackgroundProcess;
using vgpu::testing::FreePort;
using vgpu::testing::KubeletEmulator;

constexpr const char* kGpu = "GPU-d1111111-2222-4333-8444-555555555555";
constexpr const char* kNode = "mig-node-1";
constexpr const char* kContainer = "cuda";

Json MigPod(const std::string& name, int64_t gib) {
  const std::string text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
                           "\nspec:\n  schedulerName: vgpu-scheduler\n  containers:\n"
                           "    - name: cuda\n      image: cuda:12\n      resources:\n"
                           "        limits:\n          nvidia.com/gpu: 1\n"
                           "          nvidia.com/gpumem: " +
                           std::to_string(gib * 1024) + "\n";
  auto pod = YamlToJson(text);
  EXPECT_TRUE(pod.has_value()) << pod.error().ToString();
  Json p = ApiServerDefaults(pod.value_or(Json::object()), "default", "uid-" + name);
  p["spec"]["schedulerName"] = "vgpu-scheduler";
  p["status"] = {{"phase", "Pending"}};
  return p;
}

const mig::Profile& H200Profile(const std::string& name) {
  return *mig::ModelByKey("H200")->Find(name);
}

class MigPodChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = "/tmp/vgpu-e2e-mig-chain-" + std::to_string(getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream(root_ + "/devices.conf") << "model=h200 uuid=" << kGpu << "\n";
    std::ofstream(root_ + "/modes.yaml")
        << "version: v1\ngpus:\n  - devices: all\n    mode: mig-dynamic\n";
    env_ = {"VGPU_SIMGPU_STATE=" + root_ + "/simgpu.state", "VGPU_SIMGPU_LOG_LEVEL=1",
            "VGPU_SIMGPU_CONFIG=" + root_ + "/devices.conf"};
    api_ = std::make_unique<FakeApiServer>();
    api_->PutNode(k8s::testing::MakeNode(kNode));
    kubeconfig_ = k8s::testing::WriteKubeconfig(*api_, root_);
    auto deploy = LoadDeployedScheduler(VGPU_SOURCE_DIR);
    ASSERT_TRUE(deploy.has_value()) << deploy.error().ToString();
    deploy_ = *deploy;
    kubelet_ = std::make_unique<KubeletEmulator>(root_ + "/kubelet");
    ASSERT_TRUE(kubelet_->Start());
  }

  void TearDown() override {
    scheduler_.reset();
    node_.reset();
    kubelet_.reset();
    api_.reset();
    if (!HasFailure()) fs::remove_all(root_);
  }

  void StartNode() {
    SimNodeOptions o{VGPU_BIN,
                     LIBVGPU_PATH,
                     root_,
                     kubelet_->pod_resources_socket(),
                     "",
                     4,
                     {"--gpu-modes", root_ + "/modes.yaml", "--mig-journal", root_ + "/mig-claims",
                      "--pod-refresh", "200ms", "--log-level", "3"}};
    o.kubeconfig = kubeconfig_;
    o.node_name = kNode;
    o.extra_env = {"VGPU_SIMGPU_CONFIG=" + root_ + "/devices.conf"};
    o.log_name = "node.log";
    node_ = StartSimNode(o);
  }

  void StartScheduler() {
    extender_port_ = FreePort();
    metrics_port_ = FreePort();
    scheduler_ = std::make_unique<BackgroundProcess>(
        Words(std::string(VGPU_BIN) + " scheduler --kubeconfig " + kubeconfig_ +
              " --listen 127.0.0.1:" + std::to_string(extender_port_) +
              " --metrics-listen 127.0.0.1:" + std::to_string(metrics_port_) + " --log-level 3"),
        std::vector<std::string>{}, root_ + "/scheduler.log");
  }

  std::string Logs() const {
    return "\n--- node log:\n" + (node_ ? node_->Log() : "") + "\n--- scheduler log:\n" +
           (scheduler_ ? scheduler_->Log() : "");
  }

  std::pair<int, Json> Extender(const std::string& verb, const std::string& body) {
    return PostJson(extender_port_, "/" + verb, body);
  }

  std::string SchedulerMetrics() { return GetMetrics(metrics_port_); }

  // The MIG instances of GPU 0 as the simulated NVML reports them now.
  std::vector<device::MigInstance> Instances() {
    return SimMigInstances(env_, VGPU_SIMGPU_NVML, 0);
  }

  // simgpu_worker's `limits` in the container's view of the GPU (its visible device).
  std::map<std::string, std::string> RunInContainer(const std::string& visible) {
    return RunSimGpuWorkerLimits(env_, SIMGPU_WORKER, visible);
  }

  DeployedScheduler deploy_;
  std::string root_, kubeconfig_;
  std::vector<std::string> env_;
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<KubeletEmulator> kubelet_;
  std::unique_ptr<BackgroundProcess> node_, scheduler_;
  int extender_port_ = 0, metrics_port_ = 0;
};

TEST_F(MigPodChainTest, PodsGetTheSmallestFittingInstancesMadeAtAllocateAndGoneAfter) {
  const double t_begin = vgpu::testing::NowMs();
  StartNode();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, 30'000)) << Logs();
  ASSERT_TRUE(WaitFor(
      [&] {
        const Json node = api_->GetNode(kNode);
        const std::string inv =
            node["metadata"]["annotations"].value(node::kInventoryAnnotation, "");
        return inv.find("mig-dynamic") != std::string::npos;
      },
      15'000))
      << api_->GetNode(kNode).dump() << Logs();
  StartScheduler();
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string m = SchedulerMetrics();
        return m.find("\nvgpu_scheduler_ready 1\n") != std::string::npos &&
               m.find("\nvgpu_scheduler_gpus 1\n") != std::string::npos;
      },
      15'000))
      << SchedulerMetrics() << Logs();

  // ---- Filter, prioritize, bind: all three before any instance exists.
  struct Want {
    std::string name;
    int64_t gib;
    std::string profile;
  };
  const std::vector<Want> wants = {
      {"small", 10, "1g.18gb"}, {"medium", 30, "1g.35gb"}, {"large", 69, "3g.71gb"}};
  std::map<std::string, k8s::AssignedMig> got;
  for (const Want& w : wants) {
    SCOPED_TRACE(w.name);
    api_->PutPod(MigPod(w.name, w.gib));
    const Json pod = api_->GetPod("default", w.name);
    auto [fs_, filter] = Extender(deploy_.filter_verb, k8s::testing::ArgsBody(pod, {kNode}));
    ASSERT_EQ(fs_, 200) << filter.dump() << Logs();
    ASSERT_EQ(filter["NodeNames"], Json::array({kNode})) << filter.dump();
    auto [ps, priorities] = Extender(deploy_.prioritize_verb, k8s::testing::ArgsBody(pod, {kNode}));
    ASSERT_EQ(ps, 200) << priorities.dump();
    ASSERT_TRUE(priorities.is_array() && priorities.size() == 1u) << priorities.dump();
    EXPECT_EQ(priorities[0]["Score"], 10) << priorities.dump();
    auto [bs, bound] = Extender(deploy_.bind_verb, k8s::testing::BindBody(pod, kNode));
    ASSERT_EQ(bs, 200) << bound.dump();
    ASSERT_EQ(bound.value("Error", "?"), "") << bound.dump() << Logs();
    const Json placed = api_->GetPod("default", w.name);
    EXPECT_EQ(placed["spec"].value("nodeName", ""), kNode);
    auto a = node::ParseAssignment(
        placed["metadata"]["annotations"].value(node::kAssignmentAnnotation, ""));
    ASSERT_TRUE(a.has_value()) << placed.dump();
    ASSERT_EQ(a->containers.size(), 1u);
    ASSERT_EQ(a->containers[0].devices.size(), 1u);
    const auto& d = a->containers[0].devices[0];
    EXPECT_EQ(d.uuid, kGpu);  // the parent GPU
    ASSERT_TRUE(d.mig.has_value()) << placed.dump();
    EXPECT_EQ(d.mig->profile, w.profile);
    EXPECT_TRUE(d.mig->uuid.empty());  // made by the node at Allocate
    EXPECT_EQ(d.memory_bytes, static_cast<uint64_t>(w.gib) << 30);
    got[w.name] = *d.mig;
    std::printf("e2e: %lld GiB -> %s@%d\n", static_cast<long long>(w.gib), d.mig->profile.c_str(),
                d.mig->start);
  }
  mig::Layout layout{mig::ModelByKey("H200"), {}};
  for (const auto& [name, m] : got) {
    ASSERT_TRUE(mig::Add(&layout, {layout.table->IndexOf(m.profile), m.start}).ok())
        << name << ": " << m.profile << "@" << m.start << " overlaps " << mig::FormatLayout(layout);
  }
  EXPECT_TRUE(Instances().empty()) << "no instance before Allocate";
  // No room for another 69 GiB pod: the scheduler counts what it assigned.
  {
    api_->PutPod(MigPod("extra", 69));
    auto [status, answer] = Extender(
        deploy_.filter_verb, k8s::testing::ArgsBody(api_->GetPod("default", "extra"), {kNode}));
    ASSERT_EQ(status, 200) << answer.dump();
    EXPECT_TRUE(answer["NodeNames"].is_null() || answer["NodeNames"].empty()) << answer.dump();
    const std::string reason = answer.dump();
    std::printf("e2e: a fourth 69 GiB pod: %s\n", reason.c_str());
    EXPECT_NE(reason.find("vgpu: MIG: GPU 0: no fitting MIG profile has a free placement"),
              std::string::npos)
        << reason;
    api_->DeletePod("default", "extra");
  }

  // ---- kubelet admits each pod: Allocate makes its instance; the container sees exactly it.
  std::vector<std::string> available;
  for (const auto& d : kubelet_->devices()) available.push_back(d.id());
  for (const Want& w : wants) {
    SCOPED_TRACE(w.name);
    std::vector<std::string> units;
    ASSERT_TRUE(kubelet_->GetPreferredAllocation(available, {}, 1, &units).ok()) << Logs();
    ASSERT_EQ(units.size(), 1u);
    available.erase(std::find(available.begin(), available.end(), units[0]));
    v1beta1::ContainerAllocateResponse r;
    grpc::Status s = kubelet_->Allocate("default", w.name, kContainer, units, &r);
    ASSERT_TRUE(s.ok()) << s.error_message() << Logs();
    const std::string visible = r.envs().at("NVIDIA_VISIBLE_DEVICES");
    ASSERT_EQ(visible.rfind("MIG-", 0), 0u) << visible;
    EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), std::to_string(w.gib * 1024) + "m");
    std::map<std::string, std::string> seen = RunInContainer(visible);
    const mig::Profile& p = H200Profile(w.profile);
    const uint64_t bytes = static_cast<uint64_t>(p.memory_mib) << 20;
    EXPECT_EQ(seen["count"], "1");
    EXPECT_EQ(seen["device"].substr(0, seen["device"].find(' ', seen["device"].find(' ') + 1)),
              std::to_string(bytes) + " " + std::to_string(p.sm_count));
    EXPECT_EQ(seen["alloc_all"], "OK");    // the instance's memory, all of it
    EXPECT_EQ(seen["alloc_more"], "ERR");  // and not one byte more
  }
  std::vector<device::MigInstance> made = Instances();
  ASSERT_EQ(made.size(), 3u) << Logs();
  std::set<std::string> made_at, assigned_at;
  for (const auto& m : made) made_at.insert(m.profile + "@" + std::to_string(m.start));
  for (const auto& [name, m] : got) assigned_at.insert(m.profile + "@" + std::to_string(m.start));
  EXPECT_EQ(made_at, assigned_at);

  // ---- The pods go: the node destroys the instances.
  for (const Want& w : wants) api_->DeletePod("default", w.name);
  EXPECT_TRUE(WaitFor([&] { return Instances().empty(); }, 10'000)) << Logs();
  EXPECT_EQ(scheduler_->Stop(SIGTERM, std::chrono::seconds(10)), 0) << Logs();
  EXPECT_EQ(node_->Stop(SIGTERM, std::chrono::seconds(10)), 0) << Logs();
  std::printf("e2e: MIG chain %.1f s\n", (vgpu::testing::NowMs() - t_begin) / 1000);
}

}  // namespace
}  // namespace vgpu::e2e
