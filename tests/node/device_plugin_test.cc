// The node daemon driven by a kubelet emulator over real gRPC on unix sockets, with the real
// v1beta1 messages: registration, ListAndWatch, preferred allocations and 32 concurrent
// Allocate calls for different pods (each container gets its own limits), a kubelet restart,
// a GPU going unhealthy and healthy again, /metrics through promtool, slice housekeeping and a
// graceful stop. GPUs come from the scriptable FakeBackend; pods from FakeCluster.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/log.h"
#include "device/fake_backend.h"
#include "kubelet_emulator.h"
#include "node/cluster/fake_cluster.h"
#include "node/cluster/test_pods.h"
#include "node/daemon.h"
#include "node/modes/gpu_modes.h"
#include "support/wait_for.h"
#include "test_daemon.h"

namespace vgpu::node {
namespace {

namespace fs = std::filesystem;
using vgpu::testing::KubeletEmulator;

constexpr int kGpus = 4;
constexpr int kUnits = 10;
constexpr int kPods = 32;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class DevicePluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Unix socket paths are limited to 107 bytes: keep the directory short.
    root_ = "/tmp/vgpu-dp-" + std::to_string(getpid());
    fs::remove_all(root_);
    kubelet_dir_ = root_ + "/kubelet";
    kubelet_ = std::make_unique<KubeletEmulator>(kubelet_dir_);
    ASSERT_TRUE(kubelet_->Start());

    auto backend = std::make_unique<device::FakeBackend>();
    backend->AddDefaultDevices(kGpus);
    fake_ = backend.get();
    for (int i = 0; i < kGpus; ++i) uuids_.push_back(fake_->Discover()->at(i).uuid);

    DaemonOptions o;
    o.node_name = "gpu-node-1";
    o.units_per_gpu = kUnits;
    o.plugin.kubelet_dir = kubelet_dir_;
    o.plugin.retry_ms = 100;
    o.slices.root = root_ + "/slices";
    o.slices.host_libvgpu = root_ + "/libvgpu.so";
    o.slices.arbiter_dir = root_ + "/arbiter";
    o.health.gpu.probation_quiet_s = 2;
    o.metrics_listen = "127.0.0.1:0";
    o.hami_aliases = true;
    o.sample_interval_ms = 100;
    o.pod_refresh_ms = 3'600'000;  // pods are listed on demand only
    o.slice_grace_seconds = 0;
    o.version = "test";
    o.pod_resources_socket = kubelet_->pod_resources_socket();
    Customize(o);
    daemon_ = std::make_unique<Daemon>(o, std::move(backend), &cluster_);
    ASSERT_TRUE(daemon_->Start().ok());
    ASSERT_TRUE(kubelet_->WaitForRegistrations(1, 10'000));
  }

  void TearDown() override {
    daemon_.reset();
    kubelet_.reset();
    fs::remove_all(root_);
  }

  // Daemon options of a derived fixture.
  virtual void Customize(DaemonOptions&) {}

  // Units kubelet may still hand out: healthy and not allocated.
  std::vector<std::string> Available() const {
    std::vector<std::string> out;
    for (const auto& d : kubelet_->devices()) {
      if (d.health() == "Healthy" && !allocated_.count(d.id())) out.push_back(d.id());
    }
    return out;
  }

  static bool AllHealthy(const std::vector<v1beta1::Device>& devices) {
    return devices.size() == kGpus * kUnits &&
           std::all_of(devices.begin(), devices.end(),
                       [](const auto& d) { return d.health() == "Healthy"; });
  }

  std::string Scrape() {
    httplib::Client client("127.0.0.1", daemon_->metrics_port());
    auto res = client.Get("/metrics");
    return res && res->status == 200 ? res->body : "";
  }

  std::string root_;
  std::string kubelet_dir_;
  std::unique_ptr<KubeletEmulator> kubelet_;
  device::FakeBackend* fake_ = nullptr;
  std::vector<std::string> uuids_;
  FakeCluster cluster_;
  std::unique_ptr<Daemon> daemon_;
  std::set<std::string> allocated_;
};

TEST_F(DevicePluginTest, RegistersAndListsUnits) {
  v1beta1::RegisterRequest r = kubelet_->last_registration();
  EXPECT_EQ(r.version(), "v1beta1");
  EXPECT_EQ(r.endpoint(), "vgpu.sock");
  EXPECT_EQ(r.resource_name(), "nvidia.com/gpu");
  EXPECT_TRUE(r.options().get_preferred_allocation_available());
  EXPECT_TRUE(r.options().pre_start_required());  // slices are verified before containers start
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  auto devices = kubelet_->devices();
  std::set<std::string> ids;
  for (const auto& d : devices) ids.insert(d.id());
  EXPECT_EQ(ids.size(), static_cast<size_t>(kGpus * kUnits));
  EXPECT_TRUE(ids.count(uuids_[3] + "-9"));
  // NUMA topology of the fake GPUs (0, 0, 1, 1).
  for (const auto& d : devices) {
    ASSERT_EQ(d.topology().nodes_size(), 1);
    int gpu = static_cast<int>(
        std::find(uuids_.begin(), uuids_.end(), d.id().substr(0, d.id().rfind('-'))) -
        uuids_.begin());
    EXPECT_EQ(d.topology().nodes(0).id(), gpu < 2 ? 0 : 1);
  }
  EXPECT_TRUE(kubelet_->plugin_options().get_preferred_allocation_available());
  EXPECT_TRUE(kubelet_->PreStartContainer({uuids_[0] + "-0"}).ok());
  // The inventory reached the API server.
  daemon_->HousekeepNow();
  auto annotations = cluster_.NodeAnnotations("gpu-node-1");
  ASSERT_TRUE(annotations.count("vgpu.io/gpu-inventory"));
  EXPECT_NE(annotations["vgpu.io/gpu-inventory"].find("\"units\":10"), std::string::npos);
}

TEST_F(DevicePluginTest, ThirtyTwoConcurrentAllocationsEachGetTheirOwnSlice) {
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  // 32 pods bound to this node at once, 8 per GPU, each with its own memory and compute share.
  // The daemon has not listed them yet: the first preference makes it list (on demand).
  std::map<std::string, testing::GpuShare> share;
  for (int i = 0; i < kPods; ++i) {
    std::string name = "pod-" + std::to_string(i);
    testing::GpuShare g{uuids_[i % kGpus], 1000 + static_cast<uint64_t>(i), 1 + i};
    share[name] = g;
    cluster_.UpsertPod(testing::PodWith(name, "gpu-node-1", {g}, 1000 + i));
  }
  // kubelet admits pods one by one: a preference each (all units still on offer, as none is
  // allocated yet), and the Allocate calls all arrive together.
  std::vector<std::vector<std::string>> units(kPods);
  for (int i = 0; i < kPods; ++i) {
    ASSERT_TRUE(kubelet_->GetPreferredAllocation(Available(), {}, 1, &units[i]).ok());
    ASSERT_EQ(units[i].size(), 1u);
  }
  std::vector<v1beta1::ContainerAllocateResponse> responses(kPods);
  std::vector<grpc::Status> statuses(kPods);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kPods; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kPods) std::this_thread::yield();
      statuses[i] = kubelet_->Allocate("default", "pod-" + std::to_string(i), "main", units[i],
                                       &responses[i]);
    });
  }
  for (auto& t : threads) t.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "32 concurrent Allocate calls: %.1f ms\n", seconds * 1000);
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(seconds, 60.0);  // sanitizers slow everything down
#else
  EXPECT_LT(seconds, 5.0);
#endif
  EXPECT_LE(cluster_.list_count(), 4);  // on-demand lists are shared

  std::set<std::string> slices;
  for (int i = 0; i < kPods; ++i) {
    ASSERT_TRUE(statuses[i].ok()) << statuses[i].error_message();
    const auto& envs = responses[i].envs();
    // Which pod did these units go to? Its limits must be its own.
    ASSERT_TRUE(envs.count("VGPU_SLICE"));
    std::string slice = envs.at("VGPU_SLICE");
    slices.insert(slice);
    std::string pod = slice.substr(slice.find('/') + 1);
    pod = pod.substr(0, pod.find('/'));
    // Preferences go to pods in creation order.
    EXPECT_EQ(pod, "pod-" + std::to_string(i));
    const testing::GpuShare& g = share.at(pod);
    EXPECT_EQ(envs.at("NVIDIA_VISIBLE_DEVICES"), g.uuid);
    EXPECT_EQ(units[i][0].substr(0, g.uuid.size()), g.uuid);
    EXPECT_EQ(envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), std::to_string(g.memory_mib) + "m");
    EXPECT_EQ(envs.at("CUDA_DEVICE_SM_LIMIT"), std::to_string(g.cores));
    EXPECT_EQ(envs.at("CUDA_DEVICE_MEMORY_SHARED_CACHE"),
              root_ + "/slices/uid-" + pod + "_main/default_" + pod + "_main/region");
    EXPECT_EQ(envs.at("VGPU_ARBITER_DIR"), root_ + "/arbiter");
    EXPECT_EQ(envs.at("VGPU_LIMITS_FILE"), "/etc/vgpu/limits");
    // The read-only limits file on the host says the same.
    std::string limits_host;
    for (const auto& m : responses[i].mounts()) {
      if (m.container_path() == "/etc/vgpu/limits") {
        EXPECT_TRUE(m.read_only());
        limits_host = m.host_path();
      }
    }
    ASSERT_FALSE(limits_host.empty());
    std::string limits = ReadFile(limits_host);
    EXPECT_NE(limits.find("memory.0=" + std::to_string(g.memory_mib << 20) + "\n"),
              std::string::npos)
        << limits;
    EXPECT_NE(limits.find("uuid.0=" + g.uuid + "\n"), std::string::npos);
    EXPECT_NE(limits.find("pod " + std::string("default/") + pod + " "), std::string::npos);
    allocated_.insert(units[i][0]);
  }
  EXPECT_EQ(slices.size(), static_cast<size_t>(kPods));
  EXPECT_EQ(allocated_.size(), static_cast<size_t>(kPods));
  // Before each container starts, kubelet's own record (PodResources) confirms the slice.
  for (int i = 0; i < kPods; ++i) {
    grpc::Status pre = kubelet_->PreStartContainer(units[i]);
    EXPECT_TRUE(pre.ok()) << pre.error_message();
  }

  // A repeated Allocate (kubelet retry) returns the same slice.
  v1beta1::ContainerAllocateResponse again;
  ASSERT_TRUE(kubelet_->Allocate(units[5], &again).ok());
  EXPECT_EQ(again.envs().at("VGPU_SLICE"), responses[5].envs().at("VGPU_SLICE"));
  // Units of no pod, and units of two pods, are refused with a reason.
  v1beta1::ContainerAllocateResponse none;
  grpc::Status s = kubelet_->Allocate({units[0][0], units[1][0]}, &none);
  EXPECT_FALSE(s.ok());
  s = kubelet_->Allocate({"GPU-not-here-0"}, &none);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("not on this node"), std::string::npos);

  // Metrics: one slice series per pod, and promtool accepts the page.
  std::string metrics = Scrape();
  ASSERT_FALSE(metrics.empty());
  size_t count = 0;
  for (size_t p = metrics.find("\nvgpu_slice_memory_limit_bytes{"); p != std::string::npos;
       p = metrics.find("\nvgpu_slice_memory_limit_bytes{", p + 1)) {
    ++count;
  }
  EXPECT_EQ(count, static_cast<size_t>(kPods));
  EXPECT_NE(metrics.find("vgpu_node_allocations_total{node=\"gpu-node-1\",result=\"ok\"} 33"),
            std::string::npos);
  EXPECT_NE(metrics.find("hami_vgpu_memory_limit_bytes{"), std::string::npos);
  EXPECT_NE(metrics.find("vgpu_node_prestart_checks_total{node=\"gpu-node-1\",result=\"ok\"} 32"),
            std::string::npos);
  const std::string file = root_ + "/metrics.txt";
  std::ofstream(file) << metrics;
  EXPECT_EQ(
      std::system(
          ("promtool check metrics < " + file + " > " + root_ + "/promtool.out 2>&1").c_str()),
      0)
      << ReadFile(root_ + "/promtool.out");

  // Pods that are gone lose their slices.
  for (int i = 0; i < 16; ++i) cluster_.RemovePod("uid-pod-" + std::to_string(i));
  daemon_->HousekeepNow();
  EXPECT_EQ(daemon_->slices()->List().size(), static_cast<size_t>(kPods - 16));
  EXPECT_FALSE(fs::exists(root_ + "/slices/uid-pod-0_main"));
  EXPECT_TRUE(fs::exists(root_ + "/slices/uid-pod-20_main/limits"));
}

// The device plugin API does not say which pod kubelet admits. If kubelet admitted a pod out of
// creation order while an older one waits (both needing one GPU), the preference goes to the
// older pod's assignment; PreStartContainer catches it from kubelet's own record and refuses to
// start the container with the other pod's limits.
TEST_F(DevicePluginTest, OutOfOrderAdmissionIsRefusedAtPreStart) {
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  cluster_.UpsertPod(testing::PodWith("older", "gpu-node-1", {{uuids_[0], 2048, 20}}, 100));
  cluster_.UpsertPod(testing::PodWith("newer", "gpu-node-1", {{uuids_[0], 8192, 80}}, 200));
  std::vector<std::string> units;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(Available(), {}, 1, &units).ok());
  v1beta1::ContainerAllocateResponse r;
  // kubelet is admitting "newer", but the answer was "older"'s slice.
  ASSERT_TRUE(kubelet_->Allocate("default", "newer", "main", units, &r).ok());
  EXPECT_EQ(r.envs().at("VGPU_SLICE"), "default/older/main");
  grpc::Status pre = kubelet_->PreStartContainer(units);
  EXPECT_EQ(pre.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(pre.error_message().find("refusing to start a container with another pod's limits"),
            std::string::npos)
      << pre.error_message();
  EXPECT_NE(
      Scrape().find("vgpu_node_prestart_checks_total{node=\"gpu-node-1\",result=\"mismatch\"} 1"),
      std::string::npos);
}

TEST_F(DevicePluginTest, PodsPlacedByHamiGetTheirSlices) {
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  // Placed by HAMi's scheduler during a migration: hami.io/vgpu-devices-allocated gives the
  // second container of the spec two GPUs (memory in MiB; 0 cores = not throttled).
  PodInfo hami;
  hami.ns = "ml";
  hami.name = "hami-train";
  hami.uid = "uid-hami-train";
  hami.node_name = "gpu-node-1";
  hami.phase = "Pending";
  hami.created_unix = 10;
  hami.containers = {"sidecar", "trainer"};
  hami.annotations["hami.io/vgpu-devices-allocated"] =
      ";" + uuids_[2] + ",NVIDIA,3000,25:" + uuids_[3] + ",NVIDIA,5000,0:;";
  hami.annotations["hami.io/vgpu-node"] = "gpu-node-1";
  hami.annotations["hami.io/bind-time"] = "1748779200";
  cluster_.UpsertPod(hami);
  std::vector<std::string> units;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(Available(), {}, 2, &units).ok());
  ASSERT_EQ(units.size(), 2u);
  v1beta1::ContainerAllocateResponse r;
  grpc::Status st = kubelet_->Allocate("ml", "hami-train", "trainer", units, &r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(r.envs().at("VGPU_SLICE"), "ml/hami-train/trainer");
  EXPECT_EQ(r.envs().at("NVIDIA_VISIBLE_DEVICES"), uuids_[2] + "," + uuids_[3]);
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), "3000m");
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_1"), "5000m");
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_SM_LIMIT_0"), "25");
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_SM_LIMIT_1"), "100");
  EXPECT_EQ(r.envs().count("CUDA_TASK_PRIORITY"), 0u);  // HAMi records no priority
  EXPECT_TRUE(kubelet_->PreStartContainer(units).ok());
  for (const std::string& u : units) allocated_.insert(u);

  // A garbled allocation: Allocate fails with the reason, and the daemon carries on.
  PodInfo bad = testing::HamiPodWith("hami-bad", "gpu-node-1", {{uuids_[0], 1024, 30}}, 20);
  bad.annotations["hami.io/vgpu-devices-allocated"] = uuids_[0] + ",NVIDIA,1024;30:";
  cluster_.UpsertPod(bad);
  std::vector<std::string> offered;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(Available(), {}, 1, &offered).ok());
  v1beta1::ContainerAllocateResponse refused;
  grpc::Status no = kubelet_->Allocate("default", "hami-bad", "main", {uuids_[0] + "-0"}, &refused);
  EXPECT_EQ(no.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(no.error_message().find("pod default/hami-bad: annotation "
                                    "hami.io/vgpu-devices-allocated: container 0: device '" +
                                    uuids_[0] + ",NVIDIA,1024' has fewer than 4 fields"),
            std::string::npos)
      << no.error_message();
  cluster_.UpsertPod(testing::HamiPodWith("hami-ok", "gpu-node-1", {{uuids_[0], 2048, 0}}, 30));
  v1beta1::ContainerAllocateResponse ok;
  st = kubelet_->Allocate("default", "hami-ok", "main", {uuids_[0] + "-0"}, &ok);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(ok.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), "2048m");
  EXPECT_EQ(ok.envs().at("CUDA_DEVICE_SM_LIMIT"), "100");
}

// A pod whose communication pattern gave a rank order (docs/topology.md): the assignment lists
// its GPUs in that order with rank_order, GetPreferredAllocation offers the same set, and the
// container's CUDA ordinals follow it (CUDA_VISIBLE_DEVICES in rank order, the limits numbered
// alike). The simulated driver's CUDA_VISIBLE_DEVICES ordering is tested in tests/simgpu.
TEST_F(DevicePluginTest, RankOrderOfTheAssignmentIsTheContainersDeviceOrder) {
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  const std::vector<int> rank_order = {2, 0, 3, 1};
  std::vector<testing::GpuShare> shares;
  for (int rank = 0; rank < kGpus; ++rank) {
    shares.push_back({uuids_[rank_order[rank]], 1000u + rank, 100});
  }
  cluster_.UpsertPod(testing::PodWith("pipeline", "gpu-node-1", shares, 5, "main", true));
  std::vector<std::string> units;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(Available(), {}, kGpus, &units).ok());
  std::set<std::string> offered, assigned(uuids_.begin(), uuids_.end());
  for (const std::string& u : units) offered.insert(u.substr(0, u.rfind('-')));
  EXPECT_EQ(offered, assigned);
  std::sort(units.begin(), units.end());  // kubelet's order says nothing
  v1beta1::ContainerAllocateResponse resp;
  grpc::Status st = kubelet_->Allocate("default", "pipeline", "main", units, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  std::string want;
  for (int rank = 0; rank < kGpus; ++rank) want += (rank > 0 ? "," : "") + uuids_[rank_order[rank]];
  EXPECT_EQ(resp.envs().at("CUDA_VISIBLE_DEVICES"), want);
  EXPECT_EQ(resp.envs().at("NVIDIA_VISIBLE_DEVICES"), want);
  for (int rank = 0; rank < kGpus; ++rank) {
    EXPECT_EQ(resp.envs().at("CUDA_DEVICE_MEMORY_LIMIT_" + std::to_string(rank)),
              std::to_string(1000 + rank) + "m");
  }
  for (const std::string& u : units) allocated_.insert(u);
  // Without rank_order the node's order is kept, whatever the list's order, and CUDA's own
  // (PCI bus) order numbers them: no CUDA_VISIBLE_DEVICES.
  cluster_.UpsertPod(testing::PodWith("plain", "gpu-node-1", {{uuids_[3]}, {uuids_[1]}}, 6));
  std::vector<std::string> plain_units;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(Available(), {}, 2, &plain_units).ok());
  v1beta1::ContainerAllocateResponse plain;
  st = kubelet_->Allocate("default", "plain", "main", plain_units, &plain);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(plain.envs().at("NVIDIA_VISIBLE_DEVICES"), uuids_[1] + "," + uuids_[3]);
  EXPECT_EQ(plain.envs().count("CUDA_VISIBLE_DEVICES"), 0u);
  for (const std::string& u : plain_units) allocated_.insert(u);
}

// Without a pending assignment, the preference is kubelet's order with one unit per GPU: a
// container never gets two units of one GPU (Allocate would refuse them).
TEST_F(DevicePluginTest, PreferenceWithoutAnAssignmentTakesOneUnitPerGpu) {
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  auto gpus_of = [](const std::vector<std::string>& units) {
    std::set<std::string> gpus;
    for (const std::string& u : units) gpus.insert(u.substr(0, u.rfind('-')));
    return gpus;
  };
  std::vector<std::string> units;
  // Kubelet lists the units GPU by GPU: the first two are both GPU 0's.
  ASSERT_EQ(Available()[1], uuids_[0] + "-1");
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(Available(), {}, 2, &units).ok());
  EXPECT_EQ(units, (std::vector<std::string>{uuids_[0] + "-0", uuids_[1] + "-0"}));
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(Available(), {}, 4, &units).ok());
  EXPECT_EQ(units.size(), 4u);
  EXPECT_EQ(gpus_of(units).size(), 4u);
  // must_include comes first and its GPU is not taken twice.
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(Available(), {uuids_[1] + "-3"}, 3, &units).ok());
  EXPECT_EQ(units,
            (std::vector<std::string>{uuids_[1] + "-3", uuids_[0] + "-0", uuids_[2] + "-0"}));
  // Fewer GPUs with free units than asked for: one unit each, no second unit of a GPU.
  const std::vector<std::string> few = {uuids_[0] + "-0", uuids_[0] + "-1", uuids_[0] + "-2",
                                        uuids_[3] + "-5", uuids_[3] + "-6"};
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(few, {}, 3, &units).ok());
  EXPECT_EQ(units, (std::vector<std::string>{uuids_[0] + "-0", uuids_[3] + "-5"}));
  EXPECT_NE(
      Scrape().find("vgpu_node_preferred_allocations_total{node=\"gpu-node-1\",result=\"none\"} 4"),
      std::string::npos);
}

// --device-list-strategy cdi-cri,cdi-annotations and --pass-device-specs: Allocate names the
// container's GPUs as CDI devices (the response's cdi_devices field and the CDI annotation) and
// hands over their device nodes; NVIDIA_VISIBLE_DEVICES is "void".
class CdiDevicePluginTest : public DevicePluginTest {
 protected:
  void Customize(DaemonOptions& o) override {
    ASSERT_TRUE(ParseDeviceListStrategy("cdi-cri,cdi-annotations", &o.device_list).ok());
    o.device_list.pass_device_specs = true;
    o.device_list.probe_root = root_ + "/probe";  // has no /dev/nvidia-uvm*
  }
};

TEST_F(CdiDevicePluginTest, AllocateReturnsCdiDevicesAndDeviceSpecs) {
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  cluster_.UpsertPod(
      testing::PodWith("cdi", "gpu-node-1", {{uuids_[3], 1024, 50}, {uuids_[1], 2048, 100}}, 1));
  std::vector<std::string> units;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(Available(), {}, 2, &units).ok());
  v1beta1::ContainerAllocateResponse r;
  grpc::Status st = kubelet_->Allocate("default", "cdi", "main", units, &r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  // In CUDA order (the node's GPU order): GPU 1, then GPU 3.
  ASSERT_EQ(r.cdi_devices_size(), 2);
  EXPECT_EQ(r.cdi_devices(0).name(), "nvidia.com/gpu=" + uuids_[1]);
  EXPECT_EQ(r.cdi_devices(1).name(), "nvidia.com/gpu=" + uuids_[3]);
  EXPECT_EQ(r.annotations().at("cdi.k8s.io/vgpu_uid-cdi"),
            "nvidia.com/gpu=" + uuids_[1] + ",nvidia.com/gpu=" + uuids_[3]);
  EXPECT_EQ(r.envs().at("NVIDIA_VISIBLE_DEVICES"), "void");
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_1"), "1024m");  // the slice is unchanged
  std::vector<std::string> nodes;
  for (const auto& d : r.devices()) {
    nodes.push_back(d.container_path());
    EXPECT_EQ(d.host_path(), d.container_path());
    EXPECT_EQ(d.permissions(), "rw");
  }
  EXPECT_EQ(nodes, (std::vector<std::string>{"/dev/nvidia1", "/dev/nvidia3", "/dev/nvidiactl"}));
}

// NVIDIA's MIG resources with --pass-device-specs: GPU 2 holds a static layout of two 1g.18gb;
// nvidia.com/mig-1g.18gb lists both, and the pod assigned the second gets exactly it: its MIG
// UUID, its parent's device node and the /dev/nvidia-caps nodes of its GPU and compute instance
// (from mig-minors), its limits file, and its slice's memory limit.
class MigResourcePluginTest : public DevicePluginTest {
 protected:
  void Customize(DaemonOptions& o) override {
    fake_->SetMigProfiles(2, testing::MigProfilesOf("H200"));
    auto modes = ParseGpuModeConfig(
        "version: v1\ngpus:\n  - devices: [2]\n    mode: mig\n    mig-devices: {\"1g.18gb\": 2}\n",
        "modes.yaml");
    ASSERT_TRUE(modes.has_value()) << modes.error().ToString();
    o.gpu_modes = *modes;
    o.device_list.pass_device_specs = true;
    o.device_list.probe_root = root_ + "/probe";
  }
};

TEST_F(MigResourcePluginTest, AllocateGivesTheAssignedInstanceWithItsCapNodes) {
  const std::string resource = "nvidia.com/mig-1g.18gb";
  ASSERT_TRUE(kubelet_->WaitForDevices(
      resource, [](const auto& d) { return d.size() == 2; }, 5000));
  EXPECT_EQ(kubelet_->resources(), (std::vector<std::string>{"nvidia.com/gpu", resource}));
  const std::vector<device::MigInstance> layout = daemon_->state()->MigInstances(2);
  ASSERT_EQ(layout.size(), 2u);
  const device::MigInstance& target = layout[1];
  const int minor = daemon_->state()->devices()[2].minor_number;
  const std::string gpu = "gpu" + std::to_string(minor) + "/gi" + std::to_string(target.gi_id);
  fs::create_directories(root_ + "/probe/proc/driver/nvidia-caps");
  std::ofstream(root_ + "/probe/proc/driver/nvidia-caps/mig-minors")
      << "config 1\nmonitor 2\n"
      << gpu << "/access 41\n"
      << gpu << "/ci" << target.ci_id << "/access 42\n";
  cluster_.UpsertPod(testing::MigPodWith("mig", "gpu-node-1", uuids_[2], "1g.18gb", target.start,
                                         target.uuid, 8192, 1));
  std::vector<std::string> ids;
  for (const auto& d : kubelet_->devices(resource)) ids.push_back(d.id());
  std::vector<std::string> chosen;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(resource, ids, 1, &chosen).ok());
  ASSERT_EQ(chosen, std::vector<std::string>{target.uuid});
  v1beta1::ContainerAllocateResponse r;
  grpc::Status st = kubelet_->AllocateResource(resource, chosen, &r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(r.envs().at("NVIDIA_VISIBLE_DEVICES"), target.uuid);
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), "8192m");
  std::vector<std::string> nodes;
  for (const auto& d : r.devices()) nodes.push_back(d.container_path());
  EXPECT_EQ(nodes, (std::vector<std::string>{"/dev/nvidia" + std::to_string(minor),
                                             "/dev/nvidia-caps/nvidia-cap41",
                                             "/dev/nvidia-caps/nvidia-cap42", "/dev/nvidiactl"}));
  bool limits = false;
  for (const auto& m : r.mounts())
    limits |= m.container_path() == "/etc/vgpu/limits" && m.read_only();
  EXPECT_TRUE(limits);
  const std::string limits_file = ReadFile(root_ + "/slices/uid-mig_main/limits");
  EXPECT_NE(limits_file.find("uuid.0=" + target.uuid), std::string::npos) << limits_file;
}

// kubelet's registration socket missing (kubelet not running, or another --kubelet-dir): one
// warning naming the path, however long it lasts; one when it is back; again if it goes away.
TEST(PluginRunnerLogTest, KubeletsAbsenceAndReturnAreLoggedOnceEach) {
  const std::string root = "/tmp/vgpu-kl-" + std::to_string(getpid());
  fs::remove_all(root);
  fs::create_directories(root + "/kubelet");
  const std::string log = root + "/log";
  FILE* out = std::fopen(log.c_str(), "w");
  ASSERT_NE(out, nullptr);
  const LogLevel level = GetLogLevel();
  SetLogLevel(LogLevel::kInfo);
  SetLogFd(fileno(out));
  auto count = [&](const std::string& what) {
    std::string text = ReadFile(log);
    size_t n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
  };
  const std::string missing =
      "kubelet's registration socket " + root + "/kubelet/kubelet.sock does not exist";
  const std::string back =
      "kubelet's registration socket " + root + "/kubelet/kubelet.sock is back";
  {
    auto backend = std::make_unique<device::FakeBackend>();
    backend->AddDefaultDevices(1);
    FakeCluster cluster;
    Daemon daemon(testing::TestDaemonOptions(root, "n", 10), std::move(backend), &cluster);
    ASSERT_TRUE(daemon.Start().ok());
    // The runner checks the directory every 100 ms while it waits: still one warning.
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    EXPECT_EQ(count(missing), 1u) << ReadFile(log);
    EXPECT_EQ(count(back), 0u);
    KubeletEmulator kubelet(root + "/kubelet");
    ASSERT_TRUE(kubelet.Start());
    ASSERT_TRUE(kubelet.WaitForRegistrations(1, 10'000));
    EXPECT_EQ(count(back), 1u) << ReadFile(log);
    kubelet.Stop(/*wipe=*/true);
    vgpu::testing::WaitFor([&] { return count(missing) >= 2; }, std::chrono::milliseconds(2500),
                           std::chrono::milliseconds(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(600));  // and no third warning
    EXPECT_EQ(count(missing), 2u) << ReadFile(log);
    EXPECT_EQ(count(back), 1u);
  }
  SetLogFd(2);
  SetLogLevel(level);
  std::fclose(out);
  fs::remove_all(root);
}

TEST_F(DevicePluginTest, ReRegistersAfterAKubeletRestart) {
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  ASSERT_TRUE(kubelet_->Restart());  // kubelet.sock and our socket deleted, kubelet.sock back
  ASSERT_TRUE(kubelet_->WaitForRegistrations(2, 10'000));
  EXPECT_EQ(kubelet_->last_registration().resource_name(), "nvidia.com/gpu");
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  EXPECT_TRUE(fs::exists(kubelet_dir_ + "/vgpu.sock"));
  // The plugin answers on its new socket.
  cluster_.UpsertPod(testing::PodWith("after-restart", "gpu-node-1", {{uuids_[1], 512, 50}}, 1));
  std::vector<std::string> units;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(Available(), {}, 1, &units).ok());
  v1beta1::ContainerAllocateResponse r;
  ASSERT_TRUE(kubelet_->Allocate(units, &r).ok());
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), "512m");
  EXPECT_GE(daemon_->runner()->registrations(), 2u);
  // A second restart works as well.
  ASSERT_TRUE(kubelet_->Restart());
  ASSERT_TRUE(kubelet_->WaitForRegistrations(3, 10'000));
}

TEST_F(DevicePluginTest, UnhealthyGpuIsReportedAndRecovers) {
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  const std::string bad = uuids_[2];
  auto gpu_health = [&](const std::vector<v1beta1::Device>& devices, const std::string& want) {
    int n = 0;
    for (const auto& d : devices) {
      if (d.id().rfind(bad + "-", 0) == 0) {
        if (d.health() != want) return false;
        ++n;
      } else if (d.health() != "Healthy") {
        return false;
      }
    }
    return n == kUnits;
  };
  int lists_before = kubelet_->lists();
  fake_->InjectXid(2, 109);  // context-switch timeout: reset, probe, probation
  ASSERT_TRUE(
      kubelet_->WaitForDevices([&](const auto& d) { return gpu_health(d, "Unhealthy"); }, 5000));
  EXPECT_GT(kubelet_->lists(), lists_before);
  daemon_->HousekeepNow();
  // The inventory said so (the GPU may already have recovered on a slow machine: look at every
  // version written).
  auto history = cluster_.AnnotationHistory("gpu-node-1", "vgpu.io/gpu-inventory");
  EXPECT_TRUE(std::any_of(history.begin(), history.end(), [](const std::string& v) {
    return v.find("\"health\":\"unhealthy\"") != std::string::npos;
  }));
  EXPECT_NE(Scrape().find("vgpu_gpu_health_events_total{node=\"gpu-node-1\",gpu=\"2\""),
            std::string::npos);
  // Reset, a passing probe and 2 s of probation without an XID: healthy again.
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 10'000));
  daemon_->HousekeepNow();
  std::string inv = cluster_.NodeAnnotations("gpu-node-1")["vgpu.io/gpu-inventory"];
  EXPECT_EQ(inv.find("unhealthy"), std::string::npos) << inv;

  // A GPU that stops answering is unhealthy until it answers again.
  fake_->SetLost(1, true);
  ASSERT_TRUE(kubelet_->WaitForDevices(
      [&](const auto& d) {
        return std::count_if(d.begin(), d.end(),
                             [](const auto& x) { return x.health() == "Unhealthy"; }) == kUnits;
      },
      5000));
  fake_->SetLost(1, false);
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 10'000));
}

TEST_F(DevicePluginTest, StopsGracefully) {
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  ASSERT_TRUE(kubelet_->streaming());
  auto start = std::chrono::steady_clock::now();
  daemon_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(fs::exists(kubelet_dir_ + "/vgpu.sock"));
  vgpu::testing::WaitFor([&] { return !kubelet_->streaming(); }, std::chrono::milliseconds(2500),
                         std::chrono::milliseconds(50));
  EXPECT_FALSE(kubelet_->streaming());
}

// Containers in memory mode spill (vgpu.io/compute memory-mode=spill) are admitted only when the
// host's memory (here a 10 GiB MemAvailable) minus the headroom covers what their GPU's promise
// leaves over; the refusal names the numbers, and the limits file says the mode.
class SpillAdmissionTest : public DevicePluginTest {
 protected:
  void Customize(DaemonOptions& o) override {
    fs::create_directories(root_ + "/proc");
    std::ofstream(root_ + "/proc/meminfo") << "MemTotal: 20971520 kB\nMemAvailable: 10485760 kB\n";
    o.proc_root = root_ + "/proc";
    o.spill.headroom = 4ULL << 30;
  }

  // Allocates the units GetPreferredAllocation proposes for the next pending pod.
  grpc::Status AllocateFor(const std::string& pod, v1beta1::ContainerAllocateResponse* r) {
    std::vector<std::string> units;
    if (!kubelet_->GetPreferredAllocation(Available(), {}, 1, &units).ok()) {
      return grpc::Status(grpc::StatusCode::UNKNOWN, "no preferred allocation");
    }
    grpc::Status st = kubelet_->Allocate("default", pod, "main", units, r);
    if (st.ok()) {
      for (const std::string& u : units) allocated_.insert(u);
    }
    return st;
  }
};

TEST_F(SpillAdmissionTest, ASpillTheHostCannotCoverIsRefusedWithTheReason) {
  ASSERT_TRUE(kubelet_->WaitForDevices(AllHealthy, 5000));
  cluster_.UpsertPod(testing::PodWith("holder", "gpu-node-1", {{uuids_[0], 60 * 1024, 50}}, 100));
  v1beta1::ContainerAllocateResponse r;
  ASSERT_TRUE(AllocateFor("holder", &r).ok());
  // 60 + 30 GiB on an 80 GiB GPU: a spill of 10 GiB; the host has 10 - 4 = 6 GiB for it.
  PodInfo low = testing::PodWith("low", "gpu-node-1", {{uuids_[0], 30 * 1024, 50}}, 200);
  low.annotations[slice::kComputeAnnotation] = "memory-mode=spill,priority=low";
  cluster_.UpsertPod(low);
  v1beta1::ContainerAllocateResponse refused;
  grpc::Status st = AllocateFor("low", &refused);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.error_message().find("memory mode spill refused on " + uuids_[0] +
                                    ": host memory cannot cover the spill: 10.00 GiB asked, "
                                    "10.00 GiB available - 4.00 GiB headroom"),
            std::string::npos)
      << st.error_message();
  cluster_.RemovePod("uid-low");
  // 15 GiB beside the holder fits the GPU: nothing to spill, admitted, the file says spill.
  PodInfo fits = testing::PodWith("fits", "gpu-node-1", {{uuids_[0], 15 * 1024, 30}}, 300);
  fits.annotations[slice::kComputeAnnotation] = "memory-mode=spill,priority=low";
  cluster_.UpsertPod(fits);
  v1beta1::ContainerAllocateResponse ok;
  ASSERT_TRUE(AllocateFor("fits", &ok).ok());
  EXPECT_EQ(ok.envs().at("VGPU_SLICE"), "default/fits/main");
  std::string limits;
  for (const auto& m : ok.mounts()) {
    if (m.container_path() == "/etc/vgpu/limits") limits = ReadFile(m.host_path());
  }
  EXPECT_NE(limits.find("memory_mode=spill\n"), std::string::npos) << limits;
}

}  // namespace
}  // namespace vgpu::node
