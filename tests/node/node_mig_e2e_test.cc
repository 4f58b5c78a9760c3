// `vgpu node --sim --gpu-modes` end to end: a node with an H200 in mode mig-dynamic, an H100 in
// mode shared and an H200 with a static MIG layout, driven by the kubelet emulator. Pods assigned
// as the scheduler records them (docs/scheduler.md: 10 GiB -> 1g.18gb, 30 GiB -> a 35 GB profile,
// 70 GiB -> 3g.71gb) get exactly their instances; a process in each container (simgpu_worker with
// the container's CUDA_VISIBLE_DEVICES) sees one device with the instance's memory and SMs, and
// one byte more fails; the shared GPU's pod gets its software slice; the instances of the dynamic
// GPU are gone once the pods end, the static layout stays.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "e2e_util.h"
#include "kubelet_emulator.h"
#include "mig/profiles.h"
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

constexpr const char* kDynamic = "GPU-a1111111-2222-4333-8444-555555555555";
constexpr const char* kShared = "GPU-b6666666-7777-4888-8999-aaaaaaaaaaaa";
constexpr const char* kStatic = "GPU-c6666666-7777-4888-8999-bbbbbbbbbbbb";

using e2e::ReadFile;

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct TestPod {
  std::string name;
  std::string uid;
  std::string gpu;
  int index;
  std::string profile;  // "" for a software slice
  int start;
  uint64_t memory_mib;
  int cores = 100;
  std::string mig_uuid = "";  // the instance's, on a static layout
};

std::string PodJson(const TestPod& p, int order) {
  PodAssignment a;
  ContainerAssignment c;
  c.name = "main";
  AssignedDevice d{p.gpu, p.index, p.memory_mib << 20, p.cores};
  if (!p.profile.empty()) d.mig = k8s::AssignedMig{p.profile, p.start, p.mig_uuid};
  c.devices.push_back(d);
  a.containers.push_back(c);
  return R"({"metadata": {"name": ")" + p.name + R"(", "namespace": "ml", "uid": ")" + p.uid +
         R"(", "creationTimestamp": "2025-01-01T00:00:0)" + std::to_string(order) +
         R"(Z", "annotations": {"vgpu.io/assigned-gpus": )" + Quote(FormatAssignment(a)) +
         R"(, "vgpu.io/assigned-at": "2025-01-01T00:00:0)" + std::to_string(order) +
         R"(.000Z"}}, "spec": {"nodeName": "mig-node"}, "status": {"phase": "Pending"}})";
}

uint64_t ProfileMib(const std::string& name) {
  return static_cast<uint64_t>(mig::ModelByKey("H200")->Find(name)->memory_mib);
}
int ProfileSms(const std::string& name) { return mig::ModelByKey("H200")->Find(name)->sm_count; }

class NodeMigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = "/tmp/vgpu-mig-e2e-" + std::to_string(getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream(root_ + "/devices.conf")
        << "model=h200 uuid=" << kDynamic << "\nmodel=h100 uuid=" << kShared
        << "\nmodel=h200 uuid=" << kStatic << "\n";
    std::ofstream(root_ + "/modes.yaml") << "version: v1\ngpus:\n"
                                         << "  - devices: [0]\n    mode: mig-dynamic\n"
                                         << "  - devices: [2]\n    mode: mig\n"
                                         << "    mig-devices: {\"3g.71gb\": 1, \"2g.35gb\": 1, "
                                            "\"1g.18gb\": 2}\n"
                                         << "  - devices: all\n    mode: shared\n";
    pods_ = {
        {"small", "00000000-0000-4000-8000-000000000001", kDynamic, 0, "1g.18gb", 6,
         ProfileMib("1g.18gb")},
        {"medium", "00000000-0000-4000-8000-000000000002", kDynamic, 0, "1g.35gb", 4,
         ProfileMib("1g.35gb")},
        {"large", "00000000-0000-4000-8000-000000000003", kDynamic, 0, "3g.71gb", 0,
         ProfileMib("3g.71gb")},
        {"soft", "00000000-0000-4000-8000-000000000004", kShared, 1, "", 0, 6144},
        // A software slice of 20 GiB inside the static layout's 2g.35gb.
        {"static", "00000000-0000-4000-8000-000000000005", kStatic, 2, "2g.35gb", 0, 20480},
    };
    WritePods(pods_);
    kubelet_ = std::make_unique<KubeletEmulator>(root_ + "/kubelet");
    ASSERT_TRUE(kubelet_->Start());
    env_ = {"VGPU_SIMGPU_STATE=" + root_ + "/simstate", "VGPU_SIMGPU_LOG_LEVEL=1",
            "VGPU_SIMGPU_CONFIG=" + root_ + "/devices.conf"};
  }

  void TearDown() override {
    if (daemon_) daemon_->Stop(SIGKILL, std::chrono::seconds(10));
    daemon_.reset();
    kubelet_.reset();
    fs::remove_all(root_);
  }

  void WritePods(const std::vector<TestPod>& pods) {
    std::string items;
    for (size_t i = 0; i < pods.size(); ++i) {
      items += (i ? "," : "") + PodJson(pods[i], static_cast<int>(i));
    }
    std::ofstream(root_ + "/pods.json.tmp") << R"({"items": [)" << items << "]}";
    fs::rename(root_ + "/pods.json.tmp", root_ + "/pods.json");
  }

  void StartDaemon() {
    port_ = FreePort();
    daemon_ = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{VGPU_BIN,
                                 "node",
                                 "--sim",
                                 "--sim-config",
                                 root_ + "/devices.conf",
                                 "--gpu-modes",
                                 root_ + "/modes.yaml",
                                 "--mig-journal",
                                 root_ + "/mig-claims",
                                 "--kubelet-dir",
                                 root_ + "/kubelet",
                                 "--slice-dir",
                                 root_ + "/slices",
                                 "--arbiter-dir",
                                 root_ + "/arbiter",
                                 "--node-name",
                                 "mig-node",
                                 "--pods-file",
                                 root_ + "/pods.json",
                                 "--metrics-listen",
                                 "127.0.0.1:" + std::to_string(port_),
                                 "--units-per-gpu",
                                 "4",
                                 "--pod-refresh",
                                 "200ms",
                                 "--no-pod-watch",
                                 "--mps-control",
                                 root_ + "/mps-control",
                                 "--mps-dir",
                                 root_ + "/mps"},
        env_, root_ + "/daemon.log");
  }

  // The MIG instances of GPU `index` as the simulated NVML reports them now.
  std::vector<device::MigInstance> Instances(int index) {
    return e2e::SimMigInstances(env_, VGPU_SIMGPU_NVML, index);
  }

  // Runs simgpu_worker's `limits` in the container's view of the GPU.
  std::map<std::string, std::string> RunInContainer(const std::string& visible) {
    return e2e::RunSimGpuWorkerLimits(env_, SIMGPU_WORKER, visible);
  }

  std::string root_;
  std::vector<TestPod> pods_;
  std::vector<std::string> env_;
  std::unique_ptr<KubeletEmulator> kubelet_;
  std::unique_ptr<BackgroundProcess> daemon_;
  int port_ = 0;
};

TEST_F(NodeMigTest, DynamicStaticAndSharedGpusServeTheirPods) {
  StartDaemon();
  // nvidia.com/gpu, and NVIDIA's resources of the static layout's three profiles.
  ASSERT_TRUE(kubelet_->WaitForRegistrations(4, 20'000)) << ReadFile(root_ + "/daemon.log");
  const std::string kUnits = "nvidia.com/gpu";
  ASSERT_TRUE(kubelet_->WaitForDevices(
      kUnits, [](const auto& d) { return d.size() == 12; }, 5000));
  // The static layout was applied at start.
  std::vector<device::MigInstance> fixed = Instances(2);
  ASSERT_EQ(fixed.size(), 4u) << ReadFile(root_ + "/daemon.log");
  EXPECT_TRUE(Instances(0).empty());

  std::vector<std::string> available;
  for (const auto& d : kubelet_->devices(kUnits)) available.push_back(d.id());
  for (const TestPod& p : pods_) {
    SCOPED_TRACE(p.name);
    std::vector<std::string> units;
    ASSERT_TRUE(kubelet_->GetPreferredAllocation(kUnits, available, 1, &units).ok());
    ASSERT_EQ(units.size(), 1u);
    ASSERT_EQ(units[0].rfind(p.gpu, 0), 0u) << units[0];
    available.erase(std::find(available.begin(), available.end(), units[0]));
    v1beta1::ContainerAllocateResponse r;
    grpc::Status s = kubelet_->AllocateResource(kUnits, units, &r);
    ASSERT_TRUE(s.ok()) << s.error_message() << ReadFile(root_ + "/daemon.log");
    const std::string visible = r.envs().at("NVIDIA_VISIBLE_DEVICES");
    std::map<std::string, std::string> seen = RunInContainer(visible);
    EXPECT_EQ(seen["count"], "1");
    if (p.profile.empty()) {
      EXPECT_EQ(visible, p.gpu);
      EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), "6144m");
      continue;
    }
    ASSERT_EQ(visible.rfind("MIG-", 0), 0u) << visible;
    const uint64_t bytes = ProfileMib(p.profile) << 20;
    EXPECT_EQ(seen["device"].substr(0, seen["device"].find(' ', seen["device"].find(' ') + 1)),
              std::to_string(bytes) + " " + std::to_string(ProfileSms(p.profile)));
    EXPECT_EQ(seen["alloc_all"], "OK");    // the instance's memory, all of it
    EXPECT_EQ(seen["alloc_more"], "ERR");  // and not one byte more
    EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), std::to_string(p.memory_mib) + "m");
    if (p.gpu == kStatic) {
      bool in_layout = false;
      for (const auto& m : fixed) in_layout |= m.uuid == visible;
      EXPECT_TRUE(in_layout);
    }
  }
  std::vector<device::MigInstance> made = Instances(0);
  ASSERT_EQ(made.size(), 3u);
  EXPECT_EQ(made[0].profile + "@" + std::to_string(made[0].start), "3g.71gb@0");
  EXPECT_EQ(made[1].profile + "@" + std::to_string(made[1].start), "1g.35gb@4");
  EXPECT_EQ(made[2].profile + "@" + std::to_string(made[2].start), "1g.18gb@6");

  // /metrics: one series per MIG instance with dcgm-exporter's labels.
  // (The daemon reads the instances back from NVML at its next housekeeping, --pod-refresh.)
  httplib::Client client("127.0.0.1", port_);
  httplib::Result metrics{nullptr, httplib::Error::Unknown};
  // Until the profile shows, or a scrape fails (asserted below).
  vgpu::testing::WaitFor(
      [&] {
        metrics = client.Get("/metrics");
        return !(metrics && metrics->status == 200) ||
               metrics->body.find("GPU_I_PROFILE=\"1g.35gb\"") != std::string::npos;
      },
      std::chrono::seconds(5), std::chrono::milliseconds(50));
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_NE(metrics->body.find("GPU_I_PROFILE=\"1g.35gb\""), std::string::npos);
  EXPECT_NE(metrics->body.find("vgpu_gpu_mode{node=\"mig-node\",gpu=\"0\""), std::string::npos);

  // An application-class XID on the small pod's instance, with the instance's ids and no
  // process (as NVML reports most faults): charged to the instance's only tenant alone; no GPU
  // or instance leaves service.
  const device::MigInstance& small = made[2];
  auto injected = client.Post("/sim/health",
                              "gpu=0&event=xid&code=13&gi=" + std::to_string(small.gi_id) +
                                  "&ci=" + std::to_string(small.ci_id),
                              "application/x-www-form-urlencoded");
  ASSERT_TRUE(injected && injected->status == 200) << ReadFile(root_ + "/daemon.log");
  auto level = [&](const std::string& body, const std::string& pod) {
    const std::string key = "pod=\"" + pod + "\",container=\"main\"} ";
    for (size_t at = body.find("vgpu_tenant_quarantine_level{"); at != std::string::npos;
         at = body.find("vgpu_tenant_quarantine_level{", at + 1)) {
      const std::string line = body.substr(at, body.find('\n', at) - at);
      const size_t k = line.find(key);
      if (k != std::string::npos) return line.substr(k + key.size());
    }
    return std::string("none");
  };
  // Until the level shows, or a scrape fails (asserted below).
  vgpu::testing::WaitFor(
      [&] {
        metrics = client.Get("/metrics");
        return !(metrics && metrics->status == 200) || level(metrics->body, "small") == "1";
      },
      std::chrono::seconds(5), std::chrono::milliseconds(50));
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_EQ(level(metrics->body, "small"), "1") << ReadFile(root_ + "/daemon.log");
  for (const char* other : {"medium", "large", "soft", "static"}) {
    const std::string l = level(metrics->body, other);
    EXPECT_TRUE(l == "0" || l == "none") << other << ": " << l;  // "none": no region read yet
  }
  const std::string instance = "mig_instance=\"gi" + std::to_string(small.gi_id) + "/ci" +
                               std::to_string(small.ci_id) + "\",state=\"healthy\"} 1";
  EXPECT_NE(metrics->body.find(instance), std::string::npos) << instance;
  for (const auto& d : kubelet_->devices()) EXPECT_EQ(d.health(), "Healthy") << d.id();

  // The pods end: the dynamic instances are destroyed, the static layout stays.
  WritePods({});
  vgpu::testing::WaitFor([&] { return Instances(0).empty(); }, std::chrono::seconds(10),
                         std::chrono::milliseconds(100));
  EXPECT_TRUE(Instances(0).empty()) << ReadFile(root_ + "/daemon.log");
  EXPECT_EQ(Instances(2).size(), 4u);
  EXPECT_EQ(daemon_->Stop(SIGTERM, std::chrono::seconds(5)), 0);
}

// NVIDIA's MIG resources: a node with an H100 in mode shared and an H200 with a static mixed
// layout serves one device plugin per resource: nvidia.com/gpu (the units of both GPUs) and
// nvidia.com/mig-<profile> for each profile of the layout, each listing exactly that profile's
// instances. A pod asking nvidia.com/mig-1g.18gb gets the instance the scheduler assigned (the
// container sees exactly its memory), the shared pod its software slice, and a kubelet restart
// registers every resource again.
TEST_F(NodeMigTest, StaticLayoutServesNvidiasMigResourcesBesideASharedGpu) {
  std::ofstream(root_ + "/devices.conf")
      << "model=h100 uuid=" << kShared << "\nmodel=h200 uuid=" << kStatic << "\n";
  std::ofstream(root_ + "/modes.yaml") << "version: v1\ngpus:\n"
                                       << "  - devices: [1]\n    mode: mig\n"
                                       << "    mig-devices: {\"3g.71gb\": 1, \"1g.18gb\": 2, "
                                          "\"1g.18gb+me\": 1}\n"
                                       << "  - devices: all\n    mode: shared\n";
  WritePods({});
  StartDaemon();
  const std::vector<std::string> want = {"nvidia.com/gpu", "nvidia.com/mig-1g.18gb",
                                         "nvidia.com/mig-1g.18gb.me", "nvidia.com/mig-3g.71gb"};
  ASSERT_TRUE(kubelet_->WaitForRegistrations(4, 20'000)) << ReadFile(root_ + "/daemon.log");
  EXPECT_EQ(kubelet_->resources(), want);
  std::vector<device::MigInstance> layout = Instances(1);
  ASSERT_EQ(layout.size(), 4u) << ReadFile(root_ + "/daemon.log");
  // Each MIG resource lists the UUIDs of its profile's instances, healthy.
  std::map<std::string, std::set<std::string>> expected;
  for (const device::MigInstance& m : layout) {
    expected[mig::ResourceNameOfProfile(m.profile)].insert(m.uuid);
  }
  ASSERT_EQ(expected.size(), 3u);
  for (const auto& [resource, uuids] : expected) {
    SCOPED_TRACE(resource);
    const std::set<std::string> ids = uuids;
    EXPECT_TRUE(kubelet_->WaitForDevices(
        resource,
        [&](const auto& d) {
          std::set<std::string> got;
          for (const auto& x : d) {
            if (x.health() == "Healthy") got.insert(x.id());
          }
          return got == ids;
        },
        5000));
  }
  EXPECT_TRUE(kubelet_->WaitForDevices(
      "nvidia.com/gpu", [](const auto& d) { return d.size() == 8; }, 5000));

  // The scheduler assigned the second 1g.18gb instance (by UUID) and a 6 GiB software slice on
  // the shared GPU.
  std::vector<device::MigInstance> small;
  for (const device::MigInstance& m : layout) {
    if (m.profile == "1g.18gb") small.push_back(m);
  }
  ASSERT_EQ(small.size(), 2u);
  const device::MigInstance& target = small[1];
  const uint64_t instance_mib = target.memory_bytes >> 20;
  WritePods({{"mig", "00000000-0000-4000-8000-000000000010", kStatic, 1, "1g.18gb", target.start,
              instance_mib, 100, target.uuid},
             {"soft", "00000000-0000-4000-8000-000000000004", kShared, 0, "", 0, 6144}});
  std::vector<std::string> chosen;
  ASSERT_TRUE(kubelet_
                  ->GetPreferredAllocation("nvidia.com/mig-1g.18gb", {small[0].uuid, small[1].uuid},
                                           1, &chosen)
                  .ok());
  ASSERT_EQ(chosen, std::vector<std::string>{target.uuid}) << ReadFile(root_ + "/daemon.log");
  v1beta1::ContainerAllocateResponse r;
  grpc::Status s = kubelet_->AllocateResource("nvidia.com/mig-1g.18gb", chosen, &r);
  ASSERT_TRUE(s.ok()) << s.error_message() << ReadFile(root_ + "/daemon.log");
  EXPECT_EQ(r.envs().at("NVIDIA_VISIBLE_DEVICES"), target.uuid);
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), std::to_string(instance_mib) + "m");
  bool limits_file = false;
  for (const auto& m : r.mounts()) limits_file |= m.container_path() == "/etc/vgpu/limits";
  EXPECT_TRUE(limits_file);
  std::map<std::string, std::string> seen = RunInContainer(target.uuid);
  EXPECT_EQ(seen["count"], "1");
  EXPECT_EQ(seen["device"].substr(0, seen["device"].find(' ')),
            std::to_string(target.memory_bytes));
  EXPECT_EQ(seen["alloc_all"], "OK");
  EXPECT_EQ(seen["alloc_more"], "ERR");
  // The instance is the pod's now: another Allocate of it for nobody is refused.
  v1beta1::ContainerAllocateResponse again;
  EXPECT_FALSE(kubelet_->AllocateResource("nvidia.com/mig-1g.18gb", {small[0].uuid}, &again).ok());
  // A GPU unit is not a MIG device.
  EXPECT_EQ(
      kubelet_->AllocateResource("nvidia.com/mig-1g.18gb", {std::string(kShared) + "-0"}, &again)
          .error_code(),
      grpc::StatusCode::INVALID_ARGUMENT);

  // The shared pod goes to the shared GPU through nvidia.com/gpu.
  std::vector<std::string> units;
  for (const auto& d : kubelet_->devices("nvidia.com/gpu")) units.push_back(d.id());
  ASSERT_TRUE(kubelet_->GetPreferredAllocation("nvidia.com/gpu", units, 1, &chosen).ok());
  ASSERT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen[0].rfind(kShared, 0), 0u) << chosen[0];
  s = kubelet_->AllocateResource("nvidia.com/gpu", chosen, &r);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(r.envs().at("NVIDIA_VISIBLE_DEVICES"), kShared);
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), "6144m");

  // kubelet restarts: every resource registers again and lists its devices again.
  ASSERT_TRUE(kubelet_->Restart());
  for (const std::string& resource : want) {
    SCOPED_TRACE(resource);
    vgpu::testing::WaitFor([&] { return kubelet_->registrations(resource) >= 2; },
                           std::chrono::seconds(10), std::chrono::milliseconds(20));
    // Registered again (a busy host may see the restart twice and register a third time, which
    // kubelet takes as the same plugin).
    EXPECT_GE(kubelet_->registrations(resource), 2) << ReadFile(root_ + "/daemon.log");
  }
  EXPECT_TRUE(kubelet_->WaitForDevices(
      "nvidia.com/mig-1g.18gb.me", [](const auto& d) { return d.size() == 1; }, 5000));
  EXPECT_EQ(daemon_->Stop(SIGTERM, std::chrono::seconds(5)), 0);
}

// An MPS GPU: the daemon starts one control daemon for it (a fake that records its calls) and
// the container gets the MPS environment from its slice, beside libvgpu's limit.
TEST_F(NodeMigTest, MpsGpuGetsItsControlDaemonAndTheContainersTheirLimits) {
  std::ofstream(root_ + "/devices.conf") << "model=h100 uuid=" << kShared << "\n";
  std::ofstream(root_ + "/modes.yaml") << "version: v1\ngpus:\n  - devices: all\n    mode: mps\n";
  std::ofstream(root_ + "/mps-control")
      << "#!/bin/sh\necho \"$* gpu=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY\" >> '"
      << root_ << "/mps-calls'\n";
  fs::permissions(root_ + "/mps-control", fs::perms::owner_all);
  WritePods({{"tenant", "00000000-0000-4000-8000-000000000009", kShared, 0, "", 0, 8192, 30}});
  StartDaemon();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, 20'000)) << ReadFile(root_ + "/daemon.log");
  ASSERT_TRUE(kubelet_->WaitForDevices([](const auto& d) { return d.size() == 4; }, 5000));
  ASSERT_EQ(ReadFile(root_ + "/mps-calls"),
            "-d gpu=" + std::string(kShared) + " pipe=" + root_ + "/mps/" + kShared + "/pipe\n")
      << ReadFile(root_ + "/daemon.log");
  std::vector<std::string> units;
  std::vector<std::string> available;
  for (const auto& d : kubelet_->devices()) available.push_back(d.id());
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(available, {}, 1, &units).ok());
  v1beta1::ContainerAllocateResponse r;
  grpc::Status s = kubelet_->Allocate(units, &r);
  ASSERT_TRUE(s.ok()) << s.error_message() << ReadFile(root_ + "/daemon.log");
  EXPECT_EQ(r.envs().at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "30");
  EXPECT_EQ(r.envs().at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=8192M");
  EXPECT_EQ(r.envs().at("CUDA_MPS_PIPE_DIRECTORY"), root_ + "/mps/" + kShared + "/pipe");
  EXPECT_EQ(r.envs().at("CUDA_DEVICE_MEMORY_LIMIT_0"), "8192m");  // libvgpu's limit too
  bool mounted = false;
  for (const auto& m : r.mounts())
    mounted |= m.container_path() == r.envs().at("CUDA_MPS_PIPE_DIRECTORY");
  EXPECT_TRUE(mounted);
}

// `vgpu mig apply` and `vgpu mig status` on the simulated GPU: the static layout is made, a
// second apply changes nothing, a busy GPU is left as it is (exit 1), a bad file exits 2.
TEST_F(NodeMigTest, MigApplyAndStatus) {
  std::string env;
  for (const std::string& e : env_) env += e + " ";
  const std::string sim = " --sim --sim-config " + root_ + "/devices.conf";
  auto apply = vgpu::testing::RunCommand(env + VGPU_BIN + " mig apply --config " + root_ +
                                         "/modes.yaml" + sim);
  ASSERT_EQ(apply.exit_code, 0) << apply.out << apply.err;
  EXPECT_NE(apply.out.find("GPU 2 " + std::string(kStatic)), std::string::npos) << apply.out;
  EXPECT_NE(apply.out.find("created 3g.71gb@4"), std::string::npos) << apply.out;
  EXPECT_NE(apply.out.find("GPU 0 " + std::string(kDynamic)), std::string::npos);
  EXPECT_EQ(Instances(2).size(), 4u);
  auto again = vgpu::testing::RunCommand(env + VGPU_BIN + " mig apply --config " + root_ +
                                         "/modes.yaml" + sim);
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(again.out.find("created"), std::string::npos) << again.out;
  auto status = vgpu::testing::RunCommand(env + VGPU_BIN + " mig status --json" + sim);
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("\"profile\": \"2g.35gb\""), std::string::npos) << status.out;
  // A process on GPU 2 keeps it as it is under another layout.
  std::ofstream(root_ + "/other.yaml") << "version: v1\ngpus:\n  - devices: [2]\n    mode: mig\n   "
                                          " mig-devices: {\"7g.141gb\": 1}\n";
  std::vector<std::string> busy_env = env_;
  busy_env.push_back("CUDA_VISIBLE_DEVICES=" + Instances(2)[0].uuid);
  const std::string fifo = root_ + "/holder.in";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  int hold = open(fifo.c_str(), O_RDWR | O_CLOEXEC);  // the worker holds its context until closed
  ASSERT_GE(hold, 0);
  BackgroundProcess holder(
      {"/bin/sh", "-c", std::string("exec ") + SIMGPU_WORKER + " limits < " + fifo}, busy_env,
      root_ + "/holder.log");
  vgpu::testing::WaitFor([&] { return holder.Log().find("ready") != std::string::npos; },
                         std::chrono::seconds(10), std::chrono::milliseconds(20));
  ASSERT_NE(holder.Log().find("ready"), std::string::npos) << holder.Log();
  auto refused = vgpu::testing::RunCommand(env + VGPU_BIN + " mig apply --config " + root_ +
                                           "/other.yaml" + sim);
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.out.find("left as it is"), std::string::npos) << refused.out;
  EXPECT_EQ(Instances(2).size(), 4u);
  close(hold);
  vgpu::testing::WaitFor([&] { return !holder.Running(); }, std::chrono::seconds(5),
                         std::chrono::milliseconds(20));
  EXPECT_EQ(holder.Stop(SIGKILL, std::chrono::seconds(5)), 0) << holder.Log();
  std::ofstream(root_ + "/bad.yaml") << "version: v1\ngpus:\n  - devices: all\n    mode: fast\n";
  auto bad = vgpu::testing::RunCommand(env + VGPU_BIN + " mig apply --config " + root_ +
                                       "/bad.yaml" + sim);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("bad.yaml:4"), std::string::npos) << bad.err;
  // A file naming a GPU the node does not have is refused at its line before anything changes
  // (such an entry matched no GPU, and every GPU fell to shared: MIG off on an idle GPU).
  ASSERT_EQ(vgpu::testing::RunCommand(env + VGPU_BIN + " mig apply --config " + root_ +
                                      "/modes.yaml" + sim)
                .exit_code,
            0);
  auto before = vgpu::testing::RunCommand(env + VGPU_BIN + " mig status" + sim);
  ASSERT_NE(before.out.find("GPU 0 " + std::string(kDynamic) +
                            " (vgpu simulated H200 (140 GiB)): "
                            "MIG enabled"),
            std::string::npos)
      << before.out;
  std::ofstream(root_ + "/ghost.yaml")
      << "version: v1\ngpus:\n  - devices: [9]\n    mode: mig\n    mig-devices: {\"3g.71gb\": 2}\n";
  auto ghost = vgpu::testing::RunCommand(env + VGPU_BIN + " mig apply --config " + root_ +
                                         "/ghost.yaml" + sim);
  EXPECT_EQ(ghost.exit_code, 2) << ghost.out << ghost.err;
  EXPECT_NE(ghost.err.find("ghost.yaml:3:15: devices: GPU 9 does not exist on this node (its "
                           "GPUs: 0, 1, 2); nothing was changed"),
            std::string::npos)
      << ghost.err;
  EXPECT_EQ(vgpu::testing::RunCommand(env + VGPU_BIN + " mig status" + sim).out, before.out);
}

}  // namespace
}  // namespace vgpu::node
