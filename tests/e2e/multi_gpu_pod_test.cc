// End to end on one node with three simulated GPUs: kubelet (the emulator of tests/node) drives
// `vgpu node --sim` through GetPreferredAllocation and Allocate for
//   - pod "multi", whose container the scheduler assigned two GPUs, listed out of the node's
//     order: 2 GiB on the node's GPU 2, then 1 GiB on its GPU 0;
//   - pod "solo", assigned 3 GiB of GPU 2 (one of multi's GPUs).
// The containers run as processes with what Allocate returned (container_runtime.h) and the
// device view the NVIDIA runtime gives (only the GPUs of NVIDIA_VISIBLE_DEVICES, numbered in the
// node's order). The test checks that:
//   - Allocate names multi's GPUs in the node's order (GPU 0, then GPU 2) in
//     NVIDIA_VISIBLE_DEVICES, in the per-device HAMi variables and in the limits file, each with
//     its own limit;
//   - inside multi's container CUDA device 0 is the node's GPU 0 and device 1 the node's GPU 2
//     (GPU 1 is not visible), and each is enforced at exactly its own limit: the limit
//     allocates, one more byte does not;
//   - solo's container sees GPU 2 alone as device 0 and gets exactly its 3 GiB there while multi
//     holds its 2 GiB on the same GPU: the two slices of one GPU are independent.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "child_process.h"
#include "container_runtime.h"
#include "e2e_util.h"
#include "kubelet_emulator.h"
#include "node/plugin/assignment.h"
#include "node/plugin/unit_id.h"
#include "sanitizer_env.h"
#include "support/background_process.h"

namespace vgpu::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using vgpu::testing::BackgroundProcess;
using vgpu::testing::ChildProcess;
using vgpu::testing::FreePort;
using vgpu::testing::KubeletEmulator;
using vgpu::testing::RunToCompletion;

// The node's GPUs, by NVML index.
const std::vector<std::string> kGpus = {"GPU-e2e00000-aaaa-4000-8000-000000000000",
                                        "GPU-e2e00001-aaaa-4000-8000-000000000001",
                                        "GPU-e2e00002-aaaa-4000-8000-000000000002"};
constexpr uint64_t kGiB = 1ULL << 30;
constexpr int kUnitsPerGpu = 4;

struct PodCase {
  std::string name;
  std::vector<node::AssignedDevice> devices;  // in the scheduler's order
};
// multi's GPUs are listed in the opposite of the node's order on purpose.
const PodCase kMulti = {"multi", {{kGpus[2], 2, 2 * kGiB, 100}, {kGpus[0], 0, 1 * kGiB, 100}}};
const PodCase kSolo = {"solo", {{kGpus[2], 2, 3 * kGiB, 100}}};

class MultiGpuPodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = "/tmp/vgpu-e2e-multi-" + std::to_string(getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
    {
      std::ofstream conf(root_ + "/devices.conf");
      for (const std::string& uuid : kGpus) conf << "model=h100 memory=8GiB uuid=" << uuid << "\n";
    }
    // The scheduler extender's decisions, as annotations on the pods (node/plugin/assignment.h).
    json items = json::array();
    int second = 0;
    for (const PodCase* p : {&kMulti, &kSolo}) {
      node::PodAssignment a;
      a.node = "e2e-node";
      node::ContainerAssignment c;
      c.name = "main";
      c.devices = p->devices;
      a.containers.push_back(c);
      ++second;
      items.push_back(
          PendingPod(p->name, second, {{node::kAssignmentAnnotation, node::FormatAssignment(a)}}));
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

  void StartDaemon() {
    daemon_ = StartSimNode({VGPU_BIN,
                            LIBVGPU_PATH,
                            root_,
                            kubelet_->pod_resources_socket(),
                            "127.0.0.1:" + std::to_string(FreePort()),
                            kUnitsPerGpu,
                            {"--log-level", "2"}});
  }

  std::string Log() const { return "daemon log:\n" + ReadFile(root_ + "/daemon.log"); }

  // The environment of a process in `c`: what Allocate returned, the simulated GPU's driver and
  // the NVIDIA runtime's device view (only the container's GPUs, in the node's order).
  std::vector<std::string> ContainerEnv(const ContainerSpec& c) const {
    std::vector<std::string> runtime = SimGpuRuntimeEnv(SIMGPU_DIR, root_);
    const std::string visible = SimGpuVisibleDevices(c, kGpus);
    if (!visible.empty()) runtime.push_back(visible);
    return c.Environment(runtime, testing::kSanitizerRuntime);
  }

  // kubelet admits `pod`: GetPreferredAllocation for as many units as it has GPUs, then
  // Allocate; false when either call fails. Checks that the units are one on each of its GPUs.
  bool Admit(const PodCase& pod, ContainerSpec* container) {
    std::vector<std::string> units;
    grpc::Status s = kubelet_->GetPreferredAllocation(available_, {}, pod.devices.size(), &units);
    if (!s.ok()) {
      ADD_FAILURE() << "GetPreferredAllocation for " << pod.name << ": " << s.error_message()
                    << Log();
      return false;
    }
    std::vector<std::string> gpus, want;
    for (const std::string& id : units) {
      auto ref = node::ParseUnitId(id);
      EXPECT_TRUE(ref.has_value()) << id;
      if (ref.has_value()) gpus.push_back(ref->gpu_uuid);
      std::erase(available_, id);
    }
    for (const node::AssignedDevice& d : pod.devices) want.push_back(d.uuid);
    std::sort(gpus.begin(), gpus.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(gpus, want) << "preferred units of pod " << pod.name;
    v1beta1::ContainerAllocateResponse r;
    s = kubelet_->Allocate("default", pod.name, "main", units, &r);
    if (!s.ok()) {
      ADD_FAILURE() << "Allocate for " << pod.name << ": " << s.error_message() << Log();
      return false;
    }
    *container = ContainerSpec::FromAllocation(r);
    return true;
  }

  std::string root_;
  std::unique_ptr<KubeletEmulator> kubelet_;
  std::unique_ptr<BackgroundProcess> daemon_;
  std::vector<std::string> available_;
};

// The limits file as the container reads it, with each "key=value" line checked.
void ExpectLimits(const ContainerSpec& c, const std::vector<std::string>& lines,
                  const std::string& absent) {
  const std::string path = c.envs.count("VGPU_LIMITS_FILE") ? c.envs.at("VGPU_LIMITS_FILE") : "";
  ASSERT_NE(c.MountOf(path), nullptr) << "limits file " << path;
  const std::string limits = ReadFile(c.HostPath(path));
  for (const std::string& line : lines) {
    EXPECT_NE(limits.find("\n" + line + "\n"), std::string::npos) << line << " in\n" << limits;
  }
  EXPECT_EQ(limits.find("\n" + absent), std::string::npos) << absent << " in\n" << limits;
}

TEST_F(MultiGpuPodTest, ContainerOnTwoGpusGetsEachGpusLimitAtItsCudaOrdinal) {
  const double t_begin = vgpu::testing::NowMs();
  StartDaemon();
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, 30'000)) << Log();
  ASSERT_TRUE(kubelet_->WaitForDevices(
      [](const auto& d) { return d.size() == kGpus.size() * kUnitsPerGpu; }, 10'000))
      << Log();
  for (const auto& d : kubelet_->devices()) available_.push_back(d.id());

  // multi: the node's GPU 0 (1 GiB) and GPU 2 (2 GiB), in that order everywhere.
  ContainerSpec multi;
  ASSERT_TRUE(Admit(kMulti, &multi));
  EXPECT_EQ(multi.envs["NVIDIA_VISIBLE_DEVICES"], kGpus[0] + "," + kGpus[2]);
  EXPECT_EQ(multi.envs["CUDA_DEVICE_MEMORY_LIMIT_0"], "1024m");
  EXPECT_EQ(multi.envs["CUDA_DEVICE_MEMORY_LIMIT_1"], "2048m");
  EXPECT_EQ(multi.envs.count("CUDA_DEVICE_MEMORY_LIMIT_2"), 0u);
  ExpectLimits(multi,
               {"uuid.0=" + kGpus[0], "memory.0=" + std::to_string(1 * kGiB), "uuid.1=" + kGpus[2],
                "memory.1=" + std::to_string(2 * kGiB)},
               "uuid.2=");

  // solo: GPU 2 alone, with its own slice.
  ContainerSpec solo;
  ASSERT_TRUE(Admit(kSolo, &solo));
  EXPECT_EQ(solo.envs["NVIDIA_VISIBLE_DEVICES"], kGpus[2]);
  EXPECT_EQ(solo.envs["CUDA_DEVICE_MEMORY_LIMIT_0"], "3072m");
  ExpectLimits(solo, {"uuid.0=" + kGpus[2], "memory.0=" + std::to_string(3 * kGiB)}, "uuid.1=");
  EXPECT_NE(multi.envs["CUDA_DEVICE_MEMORY_SHARED_CACHE"],
            solo.envs["CUDA_DEVICE_MEMORY_SHARED_CACHE"]);

  // In multi's container: device 0 is GPU 0 and takes exactly 1 GiB, device 1 is GPU 2 and takes
  // exactly 2 GiB; the process keeps both while solo runs.
  ChildProcess holder({WORKER_PATH, "--hold", std::to_string(1 * kGiB), std::to_string(2 * kGiB)},
                      ContainerEnv(multi));
  std::string out;
  for (std::string line; (line = holder.ReadLine(60'000)) != "ready";) {
    ASSERT_FALSE(line.empty()) << "multi's worker stopped early:\n" << out << Log();
    out += line + "\n";
  }
  std::map<std::string, std::string> seen = Lines(out);
  EXPECT_EQ(seen["count"], "2") << out;
  EXPECT_EQ(seen["device.0"], kGpus[0]) << out;
  EXPECT_EQ(seen["device.1"], kGpus[2]) << out;
  EXPECT_EQ(seen["first.0"], "CUDA_SUCCESS") << out;
  EXPECT_EQ(seen["extra.0"], "CUDA_ERROR_OUT_OF_MEMORY") << out;
  EXPECT_EQ(seen["first.1"], "CUDA_SUCCESS") << out;
  EXPECT_EQ(seen["extra.1"], "CUDA_ERROR_OUT_OF_MEMORY") << out;

  // In solo's container, while multi holds 2 GiB of GPU 2: device 0 is GPU 2, exactly 3 GiB.
  int code = -1;
  out = RunToCompletion({WORKER_PATH, std::to_string(3 * kGiB)}, ContainerEnv(solo), &code);
  EXPECT_EQ(code, 0) << out;
  seen = Lines(out);
  EXPECT_EQ(seen["count"], "1") << out;
  EXPECT_EQ(seen["device.0"], kGpus[2]) << out;
  EXPECT_EQ(seen["first.0"], "CUDA_SUCCESS") << out;
  EXPECT_EQ(seen["extra.0"], "CUDA_ERROR_OUT_OF_MEMORY") << out;

  // multi's limits are per container, not per process: a second process in multi's container
  // gets not one byte more on either GPU while the first holds both limits, though both GPUs
  // have gigabytes free.
  out = RunToCompletion({WORKER_PATH, "1", "1"}, ContainerEnv(multi), &code);
  EXPECT_EQ(code, 0) << out;
  seen = Lines(out);
  EXPECT_EQ(seen["first.0"], "CUDA_ERROR_OUT_OF_MEMORY") << out;
  EXPECT_EQ(seen["first.1"], "CUDA_ERROR_OUT_OF_MEMORY") << out;

  holder.CloseStdin();
  EXPECT_EQ(holder.Wait(30'000), 0);
  std::printf("e2e: multi-GPU pod test %.1f s\n", (vgpu::testing::NowMs() - t_begin) / 1000);
}

}  // namespace
}  // namespace vgpu::e2e
