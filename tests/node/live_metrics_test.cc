// /metrics of `vgpu node --sim` as Prometheus scrapes it, with one slice on a simulated H100 and
// every alias on (--hami-metric-aliases --dcgm-metric-aliases): the kubelet emulator allocates the
// pod, a process with exactly the container's environment (libvgpu.so preloaded, the simulated
// driver) launches kernels and exits, and the scrapes are checked:
//   - every family on the page is one of the catalog's (node/metrics/metrics_catalog.def), so
//   docs/node.md
//     documents it (node_unit_test);
//   - the seconds since the slice's last kernel (vgpu_slice_compute_idle_seconds, HAMi's
//     hami_container_last_kernel_elapsed_seconds) are there while the process runs and after it
//     has exited, and grow;
//   - dcgm-exporter's default counters that the simulated GPU's NVML gives (clocks, memory
//     temperature, energy, the last XID after one is injected) carry its values, and those it
//     does not simulate (PCIe replays, video engines, row remapping) are absent, not zero;
//   - promtool's only complaints are dcgm-exporter's own names.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "child_process.h"
#include "container_runtime.h"
#include "e2e_util.h"
#include "kubelet_emulator.h"
#include "node/metrics/metrics_catalog.h"
#include "node/plugin/assignment.h"
#include "sanitizer_env.h"
#include "support/background_process.h"

namespace vgpu::node {
namespace {

namespace fs = std::filesystem;
using e2e::ReadFile;
using vgpu::testing::BackgroundProcess;
using vgpu::testing::ChildProcess;
using vgpu::testing::FreePort;
using vgpu::testing::KubeletEmulator;

constexpr const char* kGpu = "GPU-1e1e1e1e-2222-4333-8444-555555555555";

// One scrape: the families (from the TYPE lines) and each sample's value by its line's name and
// labels ("name{labels}").
struct Page {
  std::set<std::string> families;
  std::map<std::string, double> samples;
  std::string text;
};

Page Parse(const std::string& text) {
  Page p;
  p.text = text;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      p.families.insert(line.substr(7, line.find(' ', 7) - 7));
    } else if (!line.empty() && line[0] != '#') {
      const size_t space = line.rfind(' ');
      p.samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
  }
  return p;
}

// The value of the first sample of `name` whose labels contain every `label="value"` of `match`;
// nullopt when there is none.
std::optional<double> Value(const Page& p, const std::string& name,
                            const std::vector<std::string>& match = {}) {
  for (const auto& [key, v] : p.samples) {
    if (key.rfind(name + "{", 0) != 0 && key != name) continue;
    bool all = true;
    for (const std::string& m : match) all &= key.find(m) != std::string::npos;
    if (all) return v;
  }
  return std::nullopt;
}

class LiveMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = "/tmp/vgpu-live-metrics-" + std::to_string(getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream(root_ + "/devices.conf") << "model=h100 memory=16GiB uuid=" << kGpu << "\n";
    PodAssignment a;
    a.node = e2e::kTestNode;
    ContainerAssignment c;
    c.name = "main";
    c.priority = 1;
    c.devices.push_back({kGpu, 0, 2ULL << 30, 50});
    a.containers.push_back(c);
    nlohmann::json items = nlohmann::json::array();
    items.push_back(e2e::PendingPod("solo", 1, {{kAssignmentAnnotation, FormatAssignment(a)}}));
    std::ofstream(root_ + "/pods.json") << nlohmann::json{{"items", items}}.dump();
    kubelet_ = std::make_unique<KubeletEmulator>(root_ + "/kubelet");
    ASSERT_TRUE(kubelet_->Start());
    port_ = FreePort();
    daemon_ = e2e::StartSimNode({VGPU_BIN,
                                 LIBVGPU_PATH,
                                 root_,
                                 kubelet_->pod_resources_socket(),
                                 "127.0.0.1:" + std::to_string(port_),
                                 4,
                                 {"--sample-interval", "100ms", "--hami-metric-aliases",
                                  "--dcgm-metric-aliases", "--log-level", "2"}});
  }

  void TearDown() override {
    e2e::StopSimNode(daemon_.get());
    daemon_.reset();
    kubelet_.reset();
    if (!HasFailure()) fs::remove_all(root_);
  }

  std::string Log() const { return "daemon log:\n" + ReadFile(root_ + "/daemon.log"); }

  Page Scrape() const { return Parse(e2e::GetMetrics(port_)); }

  std::string root_;
  std::unique_ptr<KubeletEmulator> kubelet_;
  std::unique_ptr<BackgroundProcess> daemon_;
  int port_ = 0;
};

TEST_F(LiveMetricsTest, OneSliceScrapedAsPrometheusWouldScrapeIt) {
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, 30'000)) << Log();
  ASSERT_TRUE(kubelet_->WaitForDevices([](const auto& d) { return d.size() == 4; }, 10'000))
      << Log();
  std::vector<std::string> available;
  for (const auto& d : kubelet_->devices()) available.push_back(d.id());
  std::vector<std::string> units;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(available, {}, 1, &units).ok()) << Log();
  v1beta1::ContainerAllocateResponse r;
  grpc::Status s = kubelet_->Allocate("default", "solo", "main", units, &r);
  ASSERT_TRUE(s.ok()) << s.error_message() << Log();
  const e2e::ContainerSpec container = e2e::ContainerSpec::FromAllocation(r);
  std::vector<std::string> env =
      container.Environment(e2e::SimGpuRuntimeEnv(SIMGPU_DIR, root_), testing::kSanitizerRuntime);
  env.push_back(e2e::SimGpuVisibleDevices(container, {kGpu}));
  const std::string pod = "pod=\"solo\"";

  // While the container's process runs: 20 kernels of 1 ms, then it holds until told to exit.
  ChildProcess holder({WORKER_PATH, "telemetry-hold", "20", "1000", "0", "0", "0", "0"}, env);
  ASSERT_EQ(holder.ReadLine(60'000).rfind("launched", 0), 0u) << Log();
  Page live;
  ASSERT_TRUE(e2e::WaitFor(
      [&] {
        live = Scrape();
        return Value(live, "hami_container_last_kernel_elapsed_seconds", {pod}).has_value();
      },
      5000))
      << live.text << Log();
  EXPECT_GE(*Value(live, "vgpu_slice_compute_idle_seconds", {pod}), 0);
  holder.CloseStdin();
  ASSERT_EQ(holder.Wait(30'000), 0);

  // After it exited (the slice idle, as a notebook between runs): still there, and growing.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  const Page idle = Scrape();
  auto elapsed = Value(idle, "hami_container_last_kernel_elapsed_seconds", {pod});
  ASSERT_TRUE(elapsed.has_value()) << idle.text;
  EXPECT_GE(*elapsed, 1.0);
  EXPECT_LT(*elapsed, 30.0);
  EXPECT_EQ(Value(idle, "vgpu_slice_compute_idle_seconds", {pod}), elapsed);
  EXPECT_EQ(Value(idle, "vgpu_slice_kernel_launches_total", {pod}), 20);

  // dcgm-exporter's readings from the simulated H100's NVML (docs/simgpu.md: clocks are the
  // model's, 1980 and 2619 MHz; the memory's temperature 30..70 C; energy only grows).
  EXPECT_EQ(Value(idle, "DCGM_FI_DEV_SM_CLOCK"), 1980);
  EXPECT_EQ(Value(idle, "vgpu_gpu_sm_clock_hertz"), 1980e6);
  EXPECT_EQ(Value(idle, "DCGM_FI_DEV_MEM_CLOCK"), 2619);
  auto memory_temp = Value(idle, "DCGM_FI_DEV_MEMORY_TEMP");
  ASSERT_TRUE(memory_temp.has_value()) << idle.text;
  EXPECT_GE(*memory_temp, 30);
  EXPECT_LE(*memory_temp, 70);
  auto energy = Value(idle, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
  ASSERT_TRUE(energy.has_value()) << idle.text;
  EXPECT_GT(*energy, 0);
  EXPECT_NEAR(*Value(idle, "vgpu_gpu_energy_joules_total"), *energy / 1000, 1e-6 * *energy);
  EXPECT_EQ(Value(idle, "DCGM_FI_DEV_XID_ERRORS"), 0);  // none yet, and the driver would say
  for (const char* absent :
       {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE"}) {
    EXPECT_FALSE(Value(idle, absent).has_value()) << absent << " is not simulated";
  }

  // An application XID on the GPU: the last XID is its code.
  httplib::Client client("127.0.0.1", port_);
  auto res =
      client.Post("/sim/health", "gpu=0&event=xid&code=13", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res && res->status == 200);
  Page later;
  ASSERT_TRUE(e2e::WaitFor(
      [&] {
        later = Scrape();
        return Value(later, "DCGM_FI_DEV_XID_ERRORS") == 13;
      },
      5000))
      << later.text;
  EXPECT_EQ(Value(later, "vgpu_gpu_last_xid"), 13);
  EXPECT_GT(*Value(later, "hami_container_last_kernel_elapsed_seconds", {pod}), *elapsed);
  EXPECT_GE(*Value(later, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), *energy);

  // Every family on the page is in the catalog (and so documented in docs/node.md).
  std::set<std::string> catalog;
  for (const MetricDef& d : AllMetricFamilies()) catalog.insert(d.name);
  for (const Page* p : std::vector<const Page*>{&live, &idle, &later}) {
    for (const std::string& f : p->families) EXPECT_TRUE(catalog.count(f)) << f;
  }

  // promtool: its only complaints are about dcgm-exporter's own names (label names that are not
  // snake_case, counters without "_total"), which its dashboards query.
  if (std::system("command -v promtool > /dev/null") == 0) {
    const std::string file = root_ + "/live.prom";
    std::ofstream(file) << later.text;
    const int rc =
        std::system(("promtool check metrics < " + file + " > " + file + ".out 2>&1").c_str());
    ASSERT_TRUE(WIFEXITED(rc));
    EXPECT_TRUE(WEXITSTATUS(rc) == 0 || WEXITSTATUS(rc) == 3) << ReadFile(file + ".out");
    std::istringstream lines(ReadFile(file + ".out"));
    for (std::string line; std::getline(lines, line);) {
      EXPECT_EQ(line.rfind("DCGM_FI_", 0), 0u) << line;
    }
  }
}

}  // namespace
}  // namespace vgpu::node
