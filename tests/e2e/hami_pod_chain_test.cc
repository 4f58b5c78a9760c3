// End to end through the whole Kubernetes path, on one machine and without a cluster: a pod
// written for HAMi (limits nvidia.com/gpu: 1, gpumem: 3000, gpucores: 30, the use-gputype
// annotation; no schedulerName) goes
//   1. to the local HTTPS API server of tests/k8s, which holds the GPU node; `vgpu node --sim`
//      runs against it (kubeconfig) and publishes the node's GPU inventory on the Node object;
//   2. through `vgpu scheduler`'s admission webhook (HTTPS, certificate files, the service and
//      path of deploy/scheduler/webhook.yaml) after the API server's defaulting: the JSON patch
//      sends the pod to the vgpu-scheduler profile, and the pod is stored with it applied;
//   3. through kube-scheduler as deploy/scheduler/scheduler-config.yaml configures it: its own
//      resource fit passes (managedResources), and the extender's verbs are called as it calls
//      them (nodeCacheCapable ExtenderArgs to filter and prioritize, ExtenderBindingArgs to
//      bind): the pod is bound to the node, carries the scheduler's decision, and the
//      scheduler's watch confirms the binding;
//   4. to kubelet (the emulator of tests/node: registration, GetPreferredAllocation, Allocate and
//      PreStartContainer for the pod's container), and the container runs as a process with
//      exactly the environment and mounts Allocate returned (container_runtime.h), libvgpu.so on
//      the simulated GPU: it can allocate exactly 3000 MiB, not one byte more, and gets about
//      30 % of the GPU; the node's /metrics shows the slice with its limits.
// Bad requests along the way: a pod asking more memory than any GPU has gets an unresolvable
// reason from filter (and the scheduler keeps running); gpucores: 101 is refused by the webhook.
// A second test sends a pod that names a model (vgpu.io/estimate) instead of its memory.
// Every process is stopped and reaped when the test ends, failed or not. About 4 s.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "child_process.h"
#include "container_runtime.h"
#include "e2e_util.h"
#include "fake_api_server.h"
#include "harness.h"
#include "k8s/api/encoding.h"
#include "k8s/api/tls.h"
#include "k8s/webhook/webhook_certs.h"
#include "kube_manifests.h"
#include "kubeconfig.h"
#include "kubelet_emulator.h"
#include "node/plugin/assignment.h"
#include "sanitizer_env.h"
#include "support/background_process.h"

namespace vgpu::e2e {
namespace {

namespace fs = std::filesystem;
using k8s::testing::FakeApiServer;
using Json = nlohmann::json;
using vgpu::testing::BackgroundProcess;
using vgpu::testing::ChildProcess;
using vgpu::testing::FreePort;
using vgpu::testing::KubeletEmulator;
using vgpu::testing::RunToCompletion;

constexpr const char* kGpu = "GPU-c4a10000-1111-4222-8333-444444444444";
constexpr const char* kNode = "gpu-node-1";
constexpr uint64_t kMiB = 1ULL << 20;

// A pod as HAMi's documentation writes one; NAME, MEM and CORES are filled in.
constexpr const char* kHamiPodYaml = R"(apiVersion: v1
kind: Pod
metadata:
  name: NAME
  annotations:
    nvidia.com/use-gputype: "H100"
spec:
  containers:
    - name: ubuntu-container
      image: ubuntu:22.04
      command: ["bash", "-c", "sleep 86400"]
      resources:
        limits:
          nvidia.com/gpu: 1 # one vGPU
          nvidia.com/gpumem: MEM # MiB of device memory on it
          nvidia.com/gpucores: CORES # percent of its compute
)";

// How long the compute container runs, and the part of it that is measured.
constexpr uint64_t kRunNs = 3'000'000'000ULL;
constexpr uint64_t kMeasureFromNs = 1'000'000'000ULL;
// Generous: on an idle machine the simulated GPU holds a 30 % cap within 3 points.
constexpr double kShareTolerance = 10.0;

Json HamiPod(const std::string& name, const std::string& memory, const std::string& cores) {
  std::string text = kHamiPodYaml;
  text.replace(text.find("NAME"), 4, name);
  text.replace(text.find("MEM"), 3, memory);
  text.replace(text.find("CORES"), 5, cores);
  auto pod = YamlToJson(text);
  EXPECT_TRUE(pod.has_value()) << pod.error().ToString();
  return ApiServerDefaults(pod.value_or(Json::object()), "default", "uid-" + name);
}

class HamiPodChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = "/tmp/vgpu-e2e-chain-" + std::to_string(getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream(root_ + "/devices.conf") << "model=h100 memory=16GiB uuid=" << kGpu << "\n";
    api_ = std::make_unique<FakeApiServer>();
    // The GPU node, and a node without GPUs that kube-scheduler also asks about.
    api_->PutNode(k8s::testing::MakeNode(kNode));
    api_->PutNode(k8s::testing::MakeNode("cpu-node-1"));
    kubeconfig_ = k8s::testing::WriteKubeconfig(*api_, root_);
    // The deployed configuration names the webhook and the extender's verbs.
    auto deploy = LoadDeployedScheduler(VGPU_SOURCE_DIR);
    ASSERT_TRUE(deploy.has_value()) << deploy.error().ToString();
    deploy_ = *deploy;
    ASSERT_TRUE(deploy_.webhook_on_pod_create);
    ASSERT_TRUE(deploy_.node_cache_capable);  // kube-scheduler sends NodeNames
    kubelet_ = std::make_unique<KubeletEmulator>(root_ + "/kubelet");
    ASSERT_TRUE(kubelet_->Start());
  }

  void TearDown() override {
    // Processes first (each is stopped and reaped), then kubelet, then the API server.
    scheduler_.reset();
    node_.reset();
    kubelet_.reset();
    api_.reset();
    if (!HasFailure()) fs::remove_all(root_);
  }

  std::vector<std::string> ContainerEnv(const ContainerSpec& c) const {
    return c.Environment(SimGpuRuntimeEnv(SIMGPU_DIR, root_), testing::kSanitizerRuntime);
  }

  void StartNode() {
    node_metrics_port_ = FreePort();
    SimNodeOptions o{VGPU_BIN,
                     LIBVGPU_PATH,
                     root_,
                     kubelet_->pod_resources_socket(),
                     "127.0.0.1:" + std::to_string(node_metrics_port_),
                     10,
                     {"--log-level", "3"}};
    o.kubeconfig = kubeconfig_;
    o.node_name = kNode;
    o.log_name = "node.log";
    node_ = StartSimNode(o);
  }

  void StartScheduler() {
    auto names = k8s::ServiceDnsNames(deploy_.webhook_service);
    ASSERT_TRUE(names.has_value());
    auto certs = k8s::GenerateWebhookCertificates(*names);
    ASSERT_TRUE(certs.has_value()) << certs.error().ToString();
    webhook_ca_ = certs->ca_cert_pem;
    k8s::testing::WriteFile(root_ + "/tls.crt", certs->cert_pem);
    k8s::testing::WriteFile(root_ + "/tls.key", certs->key_pem);
    extender_port_ = FreePort();
    metrics_port_ = FreePort();
    webhook_port_ = FreePort();
    scheduler_ = std::make_unique<BackgroundProcess>(
        Words(std::string(VGPU_BIN) + " scheduler --kubeconfig " + kubeconfig_ +
              " --listen 127.0.0.1:" + std::to_string(extender_port_) +
              " --metrics-listen 127.0.0.1:" + std::to_string(metrics_port_) +
              " --webhook-listen 127.0.0.1:" + std::to_string(webhook_port_) +
              " --webhook-tls-cert " + root_ + "/tls.crt --webhook-tls-key " + root_ +
              "/tls.key --webhook-service " + deploy_.webhook_service + " --webhook-path " +
              deploy_.webhook_path + " --log-level 3"),
        std::vector<std::string>{}, root_ + "/scheduler.log");
  }

  // Starts the node daemon and waits until kubelet has its 10 units and the Node object its GPU
  // inventory (returned; empty on a timeout, with the failure recorded).
  std::string StartNodeAndWaitForInventory() {
    StartNode();
    EXPECT_TRUE(kubelet_->WaitForRegistrations(1, 30'000)) << Logs();
    EXPECT_TRUE(kubelet_->WaitForDevices([](const auto& d) { return d.size() == 10; }, 10'000))
        << Logs();
    std::string inventory;
    EXPECT_TRUE(WaitFor(
        [&] {
          const Json node = api_->GetNode(kNode);
          inventory = node["metadata"]["annotations"].value(node::kInventoryAnnotation, "");
          return !inventory.empty();
        },
        15'000))
        << Logs();
    return inventory;
  }

  // Starts the scheduler and waits until it has loaded the cluster (one GPU) and is ready.
  bool StartSchedulerAndWaitReady() {
    StartScheduler();
    return WaitFor(
        [&] {
          const std::string m = SchedulerMetrics();
          return m.find("\nvgpu_scheduler_ready 1\n") != std::string::npos &&
                 m.find("\nvgpu_scheduler_gpus 1\n") != std::string::npos;
        },
        15'000);
  }

  std::string Logs() const {
    return "\n--- node log:\n" + (node_ ? node_->Log() : "") + "\n--- scheduler log:\n" +
           (scheduler_ ? scheduler_->Log() : "");
  }

  // The API server calls the webhook over TLS, trusting the CA of its caBundle.
  httplib::Result Admit(const std::string& review) {
    const std::string host = deploy_.webhook_service + ".svc";
    httplib::SSLClient cli(host, webhook_port_);
    cli.set_hostname_addr_map({{host, "127.0.0.1"}});
    cli.enable_server_certificate_verification(true);
    auto store = k8s::BuildCaStore(webhook_ca_);
    EXPECT_TRUE(store.has_value());
    if (store) cli.set_ca_cert_store(store->release());
    cli.set_connection_timeout(2, 0);
    cli.set_read_timeout(10, 0);
    return cli.Post(deploy_.webhook_path, review, "application/json");
  }

  // kube-scheduler calling the extender (HTTP, as in its default configuration).
  std::pair<int, Json> Extender(const std::string& verb, const std::string& body) {
    return PostJson(extender_port_, "/" + verb, body);
  }

  std::string SchedulerMetrics() { return GetMetrics(metrics_port_); }
  std::string NodeMetrics() { return GetMetrics(node_metrics_port_); }

  DeployedScheduler deploy_;
  std::string root_, kubeconfig_, webhook_ca_;
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<KubeletEmulator> kubelet_;
  std::unique_ptr<BackgroundProcess> node_, scheduler_;
  int extender_port_ = 0, metrics_port_ = 0, webhook_port_ = 0, node_metrics_port_ = 0;
};

TEST_F(HamiPodChainTest, HamiPodRunsWithItsLimitsThroughWebhookExtenderAndNodeDaemon) {
  const double t_begin = vgpu::testing::NowMs();

  // ---- 1. The node daemon registers with kubelet and publishes its GPU on the Node object.
  const std::string inventory = StartNodeAndWaitForInventory();
  ASSERT_FALSE(HasFailure());
  EXPECT_NE(inventory.find(kGpu), std::string::npos) << inventory;

  // ---- 2. The scheduler loads the cluster (one GPU node) and serves its webhook.
  ASSERT_TRUE(StartSchedulerAndWaitReady()) << SchedulerMetrics() << Logs();

  const Json created = HamiPod("gpu-pod", "3000", "30");
  ASSERT_FALSE(created["spec"].contains("nodeName"));
  httplib::Result admitted{nullptr, httplib::Error::Unknown};
  ASSERT_TRUE(WaitFor(
      [&] {
        admitted = Admit(AdmissionReview(created, "review-1"));
        return static_cast<bool>(admitted);
      },
      10'000))
      << Logs();
  ASSERT_EQ(admitted->status, 200) << admitted->body;
  const Json review = Json::parse(admitted->body);
  EXPECT_EQ(review["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(review["response"]["uid"], "review-1");
  ASSERT_EQ(review["response"]["allowed"], true) << admitted->body;
  ASSERT_EQ(review["response"].value("patchType", ""), "JSONPatch") << admitted->body;
  const Json patch = Json::parse(
      k8s::Base64Decode(review["response"]["patch"].get<std::string>()).value_or("null"), nullptr,
      false);
  ASSERT_TRUE(patch.is_array()) << admitted->body;
  bool sets_scheduler = false;
  for (const Json& op : patch) {
    sets_scheduler = sets_scheduler || (op["path"] == "/spec/schedulerName" &&
                                        op.value("value", Json()) == "vgpu-scheduler");
  }
  EXPECT_TRUE(sets_scheduler) << patch.dump();
  // The API server applies the patch and stores the pod.
  Json pod = created.patch(patch);
  EXPECT_EQ(pod["spec"]["schedulerName"], "vgpu-scheduler");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"], "3000");
  pod["status"] = {{"phase", "Pending"}};
  api_->PutPod(pod);

  // ---- 3. kube-scheduler: the profile deploy/ configures takes the pod; its own resource fit
  // passes (every limit is either ignored by it or advertised by the node through kubelet), and
  // the extender is interested in the pod (no managedResources: in every pod), so it is asked:
  // filter, prioritize, bind.
  pod = api_->GetPod("default", "gpu-pod");
  EXPECT_EQ(pod["spec"]["schedulerName"], deploy_.profile);
  const std::string advertised = kubelet_->last_registration().resource_name();
  for (const auto& [resource, quantity] :
       pod["spec"]["containers"][0]["resources"]["limits"].items()) {
    const bool ignored = deploy_.ignored_resources.count(resource) != 0;
    EXPECT_TRUE(ignored || resource == advertised)
        << resource << ": kube-scheduler would find no node with it";
    if (resource == advertised) {
      EXPECT_LE(std::stoi(quantity.get<std::string>()),
                static_cast<int>(kubelet_->devices().size()));
    }
  }
  EXPECT_TRUE(deploy_.IsInterested(pod)) << "the extender would not be asked";
  auto [filter_status, filter] =
      Extender(deploy_.filter_verb, k8s::testing::ArgsBody(pod, {kNode, "cpu-node-1"}));
  ASSERT_EQ(filter_status, 200) << filter.dump() << Logs();
  EXPECT_EQ(filter["NodeNames"], Json::array({kNode})) << filter.dump();
  EXPECT_EQ(filter.value("Error", ""), "") << filter.dump();
  {
    std::string reason;
    for (const char* key : {"FailedNodes", "FailedAndUnresolvableNodes"}) {
      if (filter.contains(key) && filter[key].is_object() && filter[key].contains("cpu-node-1")) {
        reason = filter[key]["cpu-node-1"].get<std::string>();
      }
    }
    EXPECT_FALSE(reason.empty()) << "the node without GPUs needs a reason: " << filter.dump();
  }
  auto [prioritize_status, priorities] =
      Extender(deploy_.prioritize_verb, k8s::testing::ArgsBody(pod, {kNode}));
  ASSERT_EQ(prioritize_status, 200) << priorities.dump();
  ASSERT_TRUE(priorities.is_array() && priorities.size() == 1u) << priorities.dump();
  EXPECT_EQ(priorities[0]["Host"], kNode);
  EXPECT_GE(priorities[0]["Score"].get<int>(), 0);
  EXPECT_LE(priorities[0]["Score"].get<int>(), 10);
  auto [bind_status, bound] = Extender(deploy_.bind_verb, k8s::testing::BindBody(pod, kNode));
  ASSERT_EQ(bind_status, 200) << bound.dump();
  ASSERT_EQ(bound.value("Error", "?"), "") << bound.dump() << Logs();

  pod = api_->GetPod("default", "gpu-pod");
  EXPECT_EQ(pod["spec"].value("nodeName", ""), kNode) << pod.dump();
  const Json& annotations = pod["metadata"]["annotations"];
  EXPECT_EQ(annotations.value("vgpu.io/assigned-node", ""), kNode) << pod.dump();
  EXPECT_FALSE(annotations.value(node::kAssignedAtAnnotation, "").empty()) << pod.dump();
  auto decision = node::ParseAssignment(annotations.value(node::kAssignmentAnnotation, ""));
  ASSERT_TRUE(decision.has_value()) << decision.error().ToString() << "\n" << pod.dump();
  ASSERT_EQ(decision->containers.size(), 1u);
  EXPECT_EQ(decision->node, kNode);
  EXPECT_EQ(decision->containers[0].name, "ubuntu-container");
  ASSERT_EQ(decision->containers[0].devices.size(), 1u);
  EXPECT_EQ(decision->containers[0].devices[0].uuid, kGpu);
  EXPECT_EQ(decision->containers[0].devices[0].memory_bytes, 3000 * kMiB);
  EXPECT_EQ(decision->containers[0].devices[0].cores, 30);
  EXPECT_EQ(api_->bound_log(), std::vector<std::string>{"default/gpu-pod->" + std::string(kNode)});

  // The scheduler's pod watch sees its own binding: the GPU is booked, no longer assumed.
  EXPECT_TRUE(WaitFor(
      [&] {
        const std::string m = SchedulerMetrics();
        return m.find("vgpu_scheduler_pods{state=\"bound\"} 1\n") != std::string::npos &&
               m.find("vgpu_scheduler_pods{state=\"assumed\"} 0\n") != std::string::npos;
      },
      10'000))
      << SchedulerMetrics();

  // ---- 4. kubelet admits the pod on the node: GetPreferredAllocation, then Allocate.
  ASSERT_TRUE(kubelet_->plugin_options().get_preferred_allocation_available());
  std::vector<std::string> available;
  for (const auto& d : kubelet_->devices()) available.push_back(d.id());
  std::vector<std::string> units;
  grpc::Status preferred = kubelet_->GetPreferredAllocation(available, {}, 1, &units);
  ASSERT_TRUE(preferred.ok()) << preferred.error_message() << Logs();
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].rfind(kGpu, 0), 0u) << units[0];
  v1beta1::ContainerAllocateResponse allocation;
  grpc::Status allocated =
      kubelet_->Allocate("default", "gpu-pod", "ubuntu-container", units, &allocation);
  ASSERT_TRUE(allocated.ok()) << allocated.error_message() << Logs();
  // The daemon asks for PreStartContainer (it checks the admission order there); kubelet calls
  // it before starting the container.
  EXPECT_TRUE(kubelet_->plugin_options().pre_start_required());
  grpc::Status pre_start = kubelet_->PreStartContainer(units);
  ASSERT_TRUE(pre_start.ok()) << pre_start.error_message() << Logs();
  ContainerSpec container = ContainerSpec::FromAllocation(allocation);
  EXPECT_EQ(container.envs["VGPU_SLICE"], "default/gpu-pod/ubuntu-container");
  EXPECT_EQ(container.envs["NVIDIA_VISIBLE_DEVICES"], kGpu);
  EXPECT_EQ(container.envs["CUDA_DEVICE_MEMORY_LIMIT_0"], "3000m");
  EXPECT_EQ(container.envs["CUDA_DEVICE_SM_LIMIT"], "30");
  const Mount* limits_mount = container.MountOf(container.envs["VGPU_LIMITS_FILE"]);
  ASSERT_NE(limits_mount, nullptr) << Logs();
  EXPECT_TRUE(limits_mount->read_only);
  const std::string limits = ReadFile(container.HostPath(container.envs["VGPU_LIMITS_FILE"]));
  for (const std::string& line :
       {"uuid.0=" + std::string(kGpu), "memory.0=" + std::to_string(3000 * kMiB),
        std::string("cores.0=30")}) {
    EXPECT_NE(limits.find("\n" + line + "\n"), std::string::npos) << line << " in\n" << limits;
  }

  // The container, with exactly what Allocate returned: 3000 MiB, not one byte more.
  {
    int code = -1;
    const std::string out =
        RunToCompletion({WORKER_PATH, "fill", "alloc", std::to_string(3000 * kMiB)},
                        ContainerEnv(container), &code);
    EXPECT_EQ(code, 0) << out;
    auto lines = Lines(out);
    EXPECT_EQ(lines["first"], "CUDA_SUCCESS") << out;
    EXPECT_EQ(lines["extra"], "CUDA_ERROR_OUT_OF_MEMORY") << out;
  }
  // About 30 % of the GPU for a container that saturates it with 1 ms kernels.
  {
    ChildProcess tenant({VGPU_BIN, "bench", "tenant", "--kernel-ns", "1000000", "--depth", "11",
                         "--stop-ns", std::to_string(kRunNs), "--out", root_ + "/tenant.kernels"},
                        ContainerEnv(container));
    ASSERT_EQ(tenant.ReadLine(60'000), "ready") << Logs();
    const uint64_t start = MonotonicNs() + 200'000'000ULL;
    tenant.Write(std::to_string(start) + "\n");
    ASSERT_EQ(tenant.ReadLine(30'000), "done");
    tenant.CloseStdin();
    EXPECT_EQ(tenant.Wait(30'000), 0);
    const double share = ShareOf(root_ + "/tenant.kernels", start + kMeasureFromNs, start + kRunNs);
    std::printf("e2e: HAMi pod (gpucores 30) achieved %.1f%% of the GPU\n", share);
    EXPECT_NEAR(share, 30, kShareTolerance);
  }

  // The node's /metrics shows the pod's slice with its limits.
  {
    std::string m;
    EXPECT_TRUE(WaitFor(
        [&] {
          m = NodeMetrics();
          return m.find("pod=\"gpu-pod\"") != std::string::npos;
        },
        10'000))
        << m << Logs();
    bool found = false;
    std::istringstream in(m);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("vgpu_slice_memory_limit_bytes{", 0) == 0 &&
          line.find("pod=\"gpu-pod\"") != std::string::npos) {
        found = true;
        EXPECT_EQ(std::stod(line.substr(line.rfind(' ') + 1)), static_cast<double>(3000 * kMiB))
            << line;
      }
      if (line.rfind("vgpu_slice_compute_limit_ratio{", 0) == 0 &&
          line.find("pod=\"gpu-pod\"") != std::string::npos) {
        EXPECT_DOUBLE_EQ(std::stod(line.substr(line.rfind(' ') + 1)), 0.3) << line;
      }
    }
    EXPECT_TRUE(found) << m;
  }

  // ---- Bad requests. More memory than any GPU has: a reason from filter, never a crash.
  {
    Json big = HamiPod("too-big", "20000", "30");
    auto res = Admit(AdmissionReview(big, "review-2"));
    ASSERT_TRUE(res) << Logs();
    const Json r = Json::parse(res->body)["response"];
    ASSERT_EQ(r["allowed"], true) << res->body;
    big = big.patch(Json::parse(k8s::Base64Decode(r["patch"].get<std::string>()).value_or("[]")));
    big["status"] = {{"phase", "Pending"}};
    api_->PutPod(big);
    auto [status, answer] = Extender(deploy_.filter_verb, k8s::testing::ArgsBody(big, {kNode}));
    ASSERT_EQ(status, 200) << answer.dump() << Logs();
    EXPECT_TRUE(answer["NodeNames"].is_null() || answer["NodeNames"].empty()) << answer.dump();
    // Unresolvable: no preemption on this node can make room for it.
    ASSERT_TRUE(answer["FailedAndUnresolvableNodes"].is_object()) << answer.dump();
    const std::string reason = answer["FailedAndUnresolvableNodes"].value(kNode, "");
    std::printf("e2e: gpumem 20000 on a 16 GiB GPU: %s\n", reason.c_str());
    EXPECT_NE(reason.find("ubuntu-container"), std::string::npos) << answer.dump();
    EXPECT_NE(reason.find("20000 MiB"), std::string::npos) << answer.dump();
    EXPECT_NE(reason.find("16384 MiB"), std::string::npos) << answer.dump();
    EXPECT_TRUE(scheduler_->Running()) << Logs();
  }
  // gpucores 101: refused at admission, with the container, resource and value named.
  {
    const Json bad = HamiPod("too-many-cores", "3000", "101");
    auto res = Admit(AdmissionReview(bad, "review-3"));
    ASSERT_TRUE(res) << Logs();
    ASSERT_EQ(res->status, 200) << res->body;
    const Json r = Json::parse(res->body)["response"];
    EXPECT_EQ(r["uid"], "review-3");
    EXPECT_EQ(r["allowed"], false) << res->body;
    EXPECT_EQ(r["status"].value("code", 0), 422) << res->body;
    const std::string message = r["status"].value("message", "");
    std::printf("e2e: gpucores 101: %s\n", message.c_str());
    EXPECT_NE(message.find("gpucores"), std::string::npos) << res->body;
    EXPECT_NE(message.find("101"), std::string::npos) << res->body;
    EXPECT_NE(message.find("ubuntu-container"), std::string::npos) << res->body;
  }

  // Both daemons stop cleanly.
  EXPECT_EQ(scheduler_->Stop(SIGTERM, std::chrono::seconds(10)), 0) << Logs();
  EXPECT_EQ(node_->Stop(SIGTERM, std::chrono::seconds(10)), 0) << Logs();
  std::printf("e2e: whole chain %.1f s\n", (vgpu::testing::NowMs() - t_begin) / 1000);
}

// A pod that names no memory but a model (vgpu.io/estimate): the webhook fills gpumem from the
// estimate and records it, the extender places the pod on the GPU, and the container's slice has
// exactly that memory. An estimate above every GPU is refused at admission; one above this
// node's 16 GiB GPU gets an unresolvable reason from filter. About 2 s.
constexpr const char* kEstimatePodYaml = R"(apiVersion: v1
kind: Pod
metadata:
  name: NAME
  annotations:
    vgpu.io/estimate: "ESTIMATE"
spec:
  containers:
    - name: vllm
      image: vllm/vllm-openai:latest
      resources:
        limits:
          nvidia.com/gpu: 1
)";

Json EstimatePod(const std::string& name, const std::string& estimate) {
  std::string text = kEstimatePodYaml;
  text.replace(text.find("NAME"), 4, name);
  text.replace(text.find("ESTIMATE"), 8, estimate);
  auto pod = YamlToJson(text);
  EXPECT_TRUE(pod.has_value()) << pod.error().ToString();
  return ApiServerDefaults(pod.value_or(Json::object()), "default", "uid-" + name);
}

TEST_F(HamiPodChainTest, EstimateAnnotationBecomesTheSliceMemory) {
  StartNodeAndWaitForInventory();
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(StartSchedulerAndWaitReady()) << SchedulerMetrics() << Logs();

  // Annotation in: a vLLM server of Qwen2.5-1.5B for four 32k-token sequences.
  const Json created =
      EstimatePod("llm", "model=qwen2.5-1.5b,mode=serve,max-model-len=32768,concurrent=4");
  httplib::Result admitted{nullptr, httplib::Error::Unknown};
  ASSERT_TRUE(WaitFor(
      [&] {
        admitted = Admit(AdmissionReview(created, "review-estimate"));
        return static_cast<bool>(admitted);
      },
      10'000))
      << Logs();
  ASSERT_EQ(admitted->status, 200) << admitted->body;
  const Json response = Json::parse(admitted->body)["response"];
  ASSERT_EQ(response["allowed"], true) << admitted->body;
  const Json patch = Json::parse(
      k8s::Base64Decode(response["patch"].get<std::string>()).value_or("null"), nullptr, false);
  ASSERT_TRUE(patch.is_array()) << admitted->body;
  Json pod = created.patch(patch);
  // gpumem out, with the estimate recorded on the pod.
  const std::string gpumem =
      pod["spec"]["containers"][0]["resources"]["limits"].value("nvidia.com/gpumem", "");
  ASSERT_FALSE(gpumem.empty()) << pod.dump();
  const Json record = Json::parse(
      pod["metadata"]["annotations"].value("vgpu.io/estimate-result", "{}"), nullptr, false);
  EXPECT_EQ(std::to_string(record.value("gpumem_mib", int64_t{0})), gpumem) << record.dump();
  EXPECT_EQ(record.value("model", ""), "qwen2.5-1.5b");
  EXPECT_EQ(pod["spec"]["schedulerName"], "vgpu-scheduler");
  const uint64_t mib = std::stoull(gpumem);
  std::printf("e2e: vgpu.io/estimate qwen2.5-1.5b serve 4 x 32768 tokens -> gpumem %s MiB\n",
              gpumem.c_str());
  EXPECT_GT(mib, 4096u);
  EXPECT_LT(mib, 16384u);
  pod["status"] = {{"phase", "Pending"}};
  api_->PutPod(pod);

  // Pod placed: filter, prioritize, bind; the decision carries the estimate's memory.
  pod = api_->GetPod("default", "llm");
  auto [filter_status, filter] =
      Extender(deploy_.filter_verb, k8s::testing::ArgsBody(pod, {kNode}));
  ASSERT_EQ(filter_status, 200) << filter.dump() << Logs();
  EXPECT_EQ(filter["NodeNames"], Json::array({kNode})) << filter.dump();
  auto [bind_status, bound] = Extender(deploy_.bind_verb, k8s::testing::BindBody(pod, kNode));
  ASSERT_EQ(bind_status, 200) << bound.dump();
  ASSERT_EQ(bound.value("Error", "?"), "") << bound.dump() << Logs();
  pod = api_->GetPod("default", "llm");
  EXPECT_EQ(pod["spec"].value("nodeName", ""), kNode);
  auto decision =
      node::ParseAssignment(pod["metadata"]["annotations"].value(node::kAssignmentAnnotation, ""));
  ASSERT_TRUE(decision.has_value()) << pod.dump();
  ASSERT_EQ(decision->containers.size(), 1u);
  ASSERT_EQ(decision->containers[0].devices.size(), 1u);
  EXPECT_EQ(decision->containers[0].devices[0].memory_bytes, mib * kMiB);

  // kubelet's Allocate gives the container a slice of exactly that memory.
  std::vector<std::string> available;
  for (const auto& d : kubelet_->devices()) available.push_back(d.id());
  std::vector<std::string> units;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(available, {}, 1, &units).ok()) << Logs();
  v1beta1::ContainerAllocateResponse allocation;
  ASSERT_TRUE(kubelet_->Allocate("default", "llm", "vllm", units, &allocation).ok()) << Logs();
  ContainerSpec container = ContainerSpec::FromAllocation(allocation);
  EXPECT_EQ(container.envs["CUDA_DEVICE_MEMORY_LIMIT_0"], gpumem + "m");

  // An estimate above every GPU: refused at admission with the reason.
  {
    auto res = Admit(AdmissionReview(EstimatePod("huge", "model=llama-3-70b,mode=full"), "r-huge"));
    ASSERT_TRUE(res) << Logs();
    const Json r = Json::parse(res->body)["response"];
    EXPECT_EQ(r["allowed"], false) << res->body;
    const std::string message = r["status"].value("message", "");
    std::printf("e2e: vgpu.io/estimate llama-3-70b full: %s\n", message.c_str());
    EXPECT_NE(message.find("more than any known GPU holds"), std::string::npos) << message;
  }
  // Above this node's 16 GiB GPU but not above every GPU: admitted, then filter's reason.
  {
    Json big = EstimatePod("llama", "model=llama-3-8b,mode=serve,max-model-len=8192");
    auto res = Admit(AdmissionReview(big, "r-llama"));
    ASSERT_TRUE(res) << Logs();
    const Json r = Json::parse(res->body)["response"];
    ASSERT_EQ(r["allowed"], true) << res->body;
    big = big.patch(Json::parse(k8s::Base64Decode(r["patch"].get<std::string>()).value_or("[]")));
    big["status"] = {{"phase", "Pending"}};
    api_->PutPod(big);
    auto [status, answer] = Extender(deploy_.filter_verb, k8s::testing::ArgsBody(big, {kNode}));
    ASSERT_EQ(status, 200) << answer.dump();
    EXPECT_TRUE(answer["NodeNames"].is_null() || answer["NodeNames"].empty()) << answer.dump();
    ASSERT_TRUE(answer["FailedAndUnresolvableNodes"].is_object()) << answer.dump();
    EXPECT_NE(answer["FailedAndUnresolvableNodes"].value(kNode, "").find("16384 MiB"),
              std::string::npos)
        << answer.dump();
  }
  EXPECT_EQ(scheduler_->Stop(SIGTERM, std::chrono::seconds(10)), 0) << Logs();
  EXPECT_EQ(node_->Stop(SIGTERM, std::chrono::seconds(10)), 0) << Logs();
}

}  // namespace
}  // namespace vgpu::e2e
