// HAMi's dashboards and alert rules on `vgpu node --hami-metric-aliases`: every series that
// HAMi's own Grafana dashboard and alert rules query (data/hami_series.txt, which names the HAMi
// files and commits it comes from) is exported with exactly HAMi's label names; HAMi's label
// values (zone="vGPU", device_type "NVIDIA-" + the NVML name, container_index = the container's
// position in the pod spec) and units (percentages, a 0..1 memory ratio, bytes); the dashboard's
// joins find their partners; HAMi's newer series (temperature, power, ECC, memory controller)
// are there; promtool accepts the page. Two pods are allocated through a kubelet emulator on a
// FakeBackend node whose GPUs report every sensor. The same node's slice counters (read from the
// slice's accounting region) and dcgm-exporter's names (--dcgm-metric-aliases) are checked too.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "device/fake_backend.h"
#include "kubelet_emulator.h"
#include "node/cluster/fake_cluster.h"
#include "node/cluster/test_pods.h"
#include "node/daemon.h"
#include "shm/proc_identity.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"
#include "test_daemon.h"

namespace vgpu::node {
namespace {

namespace fs = std::filesystem;
using vgpu::testing::KubeletEmulator;

using LabelMap = std::map<std::string, std::string>;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Sample {
  LabelMap labels;
  double value = 0;
};

// name -> samples, and name -> TYPE, from the exposition text.
struct Page {
  std::map<std::string, std::vector<Sample>> series;
  std::map<std::string, std::string> types;
};

Page Parse(const std::string& text) {
  Page page;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      page.types[name] = type;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    size_t brace = line.find('{');
    size_t space = line.rfind(' ');
    std::string name = line.substr(0, std::min(brace, line.find(' ')));
    Sample s;
    if (brace != std::string::npos) {
      size_t i = brace + 1;
      while (i < line.size() && line[i] != '}') {
        size_t eq = line.find('=', i);
        std::string key = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;  // past ="
        for (; line[j] != '"'; ++j) {
          if (line[j] == '\\') ++j;
          value += line[j];
        }
        s.labels[key] = value;
        i = j + 1;
        if (line[i] == ',') ++i;
      }
    }
    s.value = std::stod(line.substr(space + 1));
    page.series[name].push_back(s);
  }
  return page;
}

std::set<std::string> Split(const std::string& list) {
  std::set<std::string> out;
  if (list == "-") return out;
  std::stringstream s(list);
  std::string item;
  while (std::getline(s, item, ',')) out.insert(item);
  return out;
}

struct HamiSeries {
  std::string name;
  std::set<std::string> where;
  std::set<std::string> labels;   // what HAMi exports
  std::set<std::string> queried;  // what its dashboard and alerts read
};

std::vector<HamiSeries> LoadFixture() {
  std::ifstream in(VGPU_HAMI_SERIES);
  std::vector<HamiSeries> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream l(line);
    std::string name, where, labels, queried;
    l >> name >> where >> labels >> queried;
    out.push_back({name, Split(where), Split(labels), Split(queried)});
  }
  return out;
}

std::set<std::string> Keys(const LabelMap& m) {
  std::set<std::string> out;
  for (const auto& [k, v] : m) out.insert(k);
  return out;
}

constexpr const char* kModel = "NVIDIA A100-SXM4-40GB";
constexpr uint64_t kGpuMemory = 40ULL << 30;

class HamiMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = "/tmp/vgpu-hami-" + std::to_string(getpid());
    fs::remove_all(root_);
    kubelet_ = std::make_unique<KubeletEmulator>(root_ + "/kubelet");
    ASSERT_TRUE(kubelet_->Start());
    auto backend = std::make_unique<device::FakeBackend>();
    for (int i = 0; i < 2; ++i) {
      device::DeviceInfo d;
      d.uuid = "GPU-4a4a4a4a-0000-4000-8000-00000000000" + std::to_string(i);
      d.name = kModel;
      d.pci_bus_id = "0000:1" + std::to_string(i) + ":00.0";
      d.memory_total_bytes = kGpuMemory;
      d.sm_count = 108;
      backend->AddDevice(d);
      uuids_.push_back(d.uuid);
      device::DeviceSample s;
      s.memory_used_bytes = (3ULL + i) << 30;
      s.sm_utilization = 0.37;
      s.memory_bandwidth_utilization = 0.12;
      s.temperature_celsius = 61;
      s.power_watts = 245.5;
      s.ecc_corrected_errors_total = 3;
      s.ecc_uncorrected_errors_total = 0;
      // The readings of device/nvml_sensors.h, as a datacenter GPU's NVML gives them.
      s.memory_temperature_celsius = 54;
      s.energy_joules_total = 123456.789;
      s.sm_clock_hz = 1755e6;
      s.memory_clock_hz = 2619e6;
      s.encoder_utilization = 0.05;
      s.decoder_utilization = 0.25;
      s.pcie_transmit_bytes_per_second = 2048.0 * 1000;
      s.pcie_receive_bytes_per_second = 1024.0 * 300;
      s.pcie_replay_errors_total = 2;
      s.remapped_rows_corrected_total = 4;
      s.remapped_rows_uncorrected_total = 1;
      s.row_remap_failed = false;
      if (i == 0) {  // a Hopper's GPM (device/nvml_gpm.h)
        s.gpm = device::GpmMetrics{};
        s.gpm->sm_activity = 0.42;
        s.gpm->dram_activity = 0.3;
        s.gpm->pcie_transmit_bytes_per_second = 1e9;
      }
      backend->SetSample(i, s);
    }
    DaemonOptions o = testing::TestDaemonOptions(root_, "gpu-node-7", 4);
    o.hami_aliases = true;
    o.dcgm_aliases = dcgm_aliases_;
    daemon_ = std::make_unique<Daemon>(o, std::move(backend), &cluster_);
    ASSERT_TRUE(daemon_->Start().ok());
    ASSERT_TRUE(kubelet_->WaitForRegistrations(1, 10'000));
  }

  void TearDown() override {
    daemon_.reset();
    kubelet_.reset();
    fs::remove_all(root_);
  }

  // Binds pod `name` (containers `containers`, `gpu_container` assigned `share`) and allocates it.
  void AllocatePod(const std::string& name, const std::vector<std::string>& containers,
                   const std::string& gpu_container, const testing::GpuShare& share) {
    PodInfo p = testing::PodWith(name, "gpu-node-7", {share}, ++created_, gpu_container);
    p.ns = "ml";
    p.containers = containers;
    cluster_.UpsertPod(p);
    std::vector<std::string> available;
    for (const auto& d : kubelet_->devices()) {
      if (!allocated_.count(d.id())) available.push_back(d.id());
    }
    std::vector<std::string> units;
    ASSERT_TRUE(kubelet_->GetPreferredAllocation(available, {}, 1, &units).ok());
    ASSERT_EQ(units.size(), 1u);
    v1beta1::ContainerAllocateResponse r;
    grpc::Status st = kubelet_->Allocate("ml", name, gpu_container, units, &r);
    ASSERT_TRUE(st.ok()) << st.error_message();
    allocated_.insert(units[0]);
  }

  bool dcgm_aliases_ = false;
  std::string root_;
  std::unique_ptr<KubeletEmulator> kubelet_;
  std::vector<std::string> uuids_;
  FakeCluster cluster_;
  std::unique_ptr<Daemon> daemon_;
  std::set<std::string> allocated_;
  int64_t created_ = 100;
};

TEST_F(HamiMetricsTest, HamisDashboardAndAlertSeriesHaveHamisLabels) {
  ASSERT_TRUE(kubelet_->WaitForDevices([](const auto& d) { return d.size() == 8; }, 5000));
  AllocatePod("trainer", {"sidecar", "main"}, "main", {uuids_[0], 4096, 30});
  AllocatePod("server", {"main"}, "main", {uuids_[0], 2048, 20});
  daemon_->SampleNow();
  const std::string text = daemon_->Metrics();
  const Page page = Parse(text);

  const std::vector<HamiSeries> fixture = LoadFixture();
  ASSERT_GE(fixture.size(), 20u) << "fixture not read from " << VGPU_HAMI_SERIES;
  for (const HamiSeries& h : fixture) {
    SCOPED_TRACE(h.name);
    auto it = page.series.find(h.name);
    if (it == page.series.end()) {
      // Only the seconds since the last kernel need a kernel (HAMi's monitor omits it too).
      EXPECT_EQ(h.name, "hami_container_last_kernel_elapsed_seconds") << "not exported";
      continue;
    }
    for (const Sample& s : it->second) {
      EXPECT_EQ(Keys(s.labels), h.labels);
      for (const std::string& q : h.queried) EXPECT_TRUE(s.labels.count(q)) << q;
      EXPECT_EQ(s.labels.at("zone"), "vGPU");
      if (s.labels.count("device_type")) {
        EXPECT_EQ(s.labels.at("device_type"), std::string("NVIDIA-") + kModel);
      }
      if (s.labels.count("node")) {
        EXPECT_EQ(s.labels.at("node"), "gpu-node-7");
      }
    }
  }

  auto find = [&](const std::string& name, const LabelMap& match) -> const Sample* {
    auto it = page.series.find(name);
    if (it == page.series.end()) return nullptr;
    for (const Sample& s : it->second) {
      bool all = true;
      for (const auto& [k, v] : match) all &= s.labels.count(k) && s.labels.at(k) == v;
      if (all) return &s;
    }
    return nullptr;
  };
  // HAMi's units: bytes, percentages (0..100), the node memory ratio 0..1, MiB in a label.
  const Sample* limit = find("hami_gpu_memory_limit_bytes", {{"device_uuid", uuids_[0]}});
  ASSERT_NE(limit, nullptr);
  EXPECT_EQ(limit->value, static_cast<double>(kGpuMemory));
  EXPECT_EQ(find("hami_gpu_memory_allocated_bytes", {{"device_uuid", uuids_[0]}})->value,
            static_cast<double>(6144ULL << 20));
  EXPECT_EQ(find("hami_gpu_memory_allocated_bytes", {{"device_uuid", uuids_[0]}})
                ->labels.at("device_cores"),
            "100");
  EXPECT_DOUBLE_EQ(
      find("hami_node_gpu_memory_allocated_ratio", {{"device_uuid", uuids_[0]}})->value,
      6144.0 / 40960.0);
  EXPECT_EQ(find("hami_gpu_core_allocated_ratio", {{"device_uuid", uuids_[0]}})->value, 50);
  EXPECT_EQ(find("hami_gpu_core_allocated_ratio", {{"device_uuid", uuids_[1]}})->value, 0);
  EXPECT_EQ(find("hami_gpu_core_limit_ratio", {{"device_uuid", uuids_[1]}})->value, 100);
  EXPECT_EQ(find("hami_gpu_shared_count", {{"device_uuid", uuids_[0]}})->value, 2);
  EXPECT_EQ(find("hami_node_gpu_overview", {{"device_uuid", uuids_[0]}})
                ->labels.at("device_memory_limit"),
            "40960");
  EXPECT_DOUBLE_EQ(find("hami_host_gpu_utilization_ratio", {{"device_uuid", uuids_[0]}})->value,
                   37);
  EXPECT_DOUBLE_EQ(
      find("hami_host_gpu_memory_controller_utilization_ratio", {{"device_uuid", uuids_[0]}})
          ->value,
      12);
  EXPECT_EQ(find("hami_host_gpu_memory_used_bytes", {{"device_uuid", uuids_[1]}})->value,
            static_cast<double>(4ULL << 30));
  EXPECT_EQ(find("hami_host_gpu_temperature_celsius", {{"device_uuid", uuids_[0]}})->value, 61);
  EXPECT_EQ(find("hami_host_gpu_power_usage_watts", {{"device_uuid", uuids_[0]}})->value, 245.5);
  EXPECT_EQ(find("hami_host_gpu_ecc_errors_total",
                 {{"device_uuid", uuids_[0]}, {"error_type", "corrected"}})
                ->value,
            3);
  ASSERT_NE(find("hami_host_gpu_ecc_errors_total",
                 {{"device_uuid", uuids_[0]}, {"error_type", "uncorrected"}}),
            nullptr);
  // Per container: the monitor's vdevice_index (CUDA index), the scheduler's container_index
  // (position in the pod spec: "main" is the trainer's second container).
  const Sample* trainer_limit =
      find("hami_vgpu_memory_limit_bytes", {{"pod", "trainer"}, {"container", "main"}});
  ASSERT_NE(trainer_limit, nullptr);
  EXPECT_EQ(trainer_limit->value, static_cast<double>(4096ULL << 20));
  EXPECT_EQ(trainer_limit->labels.at("vdevice_index"), "0");
  EXPECT_EQ(trainer_limit->labels.at("namespace"), "ml");
  const Sample* trainer_alloc = find("hami_vgpu_memory_allocated_bytes", {{"pod", "trainer"}});
  ASSERT_NE(trainer_alloc, nullptr);
  EXPECT_EQ(trainer_alloc->labels.at("container_index"), "1");
  EXPECT_EQ(trainer_alloc->value, static_cast<double>(4096ULL << 20));
  EXPECT_EQ(
      find("hami_vgpu_memory_allocated_bytes", {{"pod", "server"}})->labels.at("container_index"),
      "0");
  EXPECT_EQ(find("hami_vgpu_core_allocated_ratio", {{"pod", "trainer"}})->value, 30);
  EXPECT_EQ(find("hami_vgpu_core_allocated_ratio", {{"pod", "server"}})->value, 20);

  // The dashboard's joins: host series `and on (device_uuid)` hami_gpu_memory_limit_bytes of the
  // node; `hami_vgpu_memory_used_bytes / hami_vgpu_memory_limit_bytes` sample by sample.
  for (const char* host : {"hami_host_gpu_memory_used_bytes", "hami_host_gpu_utilization_ratio"}) {
    for (const Sample& s : page.series.at(host)) {
      EXPECT_NE(find("hami_gpu_memory_limit_bytes",
                     {{"device_uuid", s.labels.at("device_uuid")}, {"node", "gpu-node-7"}}),
                nullptr)
          << host;
    }
  }
  ASSERT_EQ(page.series.at("hami_vgpu_memory_used_bytes").size(), 2u);
  for (const Sample& used : page.series.at("hami_vgpu_memory_used_bytes")) {
    bool matched = false;
    for (const Sample& l : page.series.at("hami_vgpu_memory_limit_bytes")) {
      matched |= l.labels == used.labels && l.value > 0;
    }
    EXPECT_TRUE(matched) << used.labels.at("pod");
  }
  // Types promtool accepts (PromQL does not look at them).
  EXPECT_EQ(page.types.at("hami_gpu_shared_count"), "untyped");
  EXPECT_EQ(page.types.at("hami_host_gpu_ecc_errors_total"), "counter");
  const std::string file = root_ + "/metrics.prom";
  std::ofstream(file) << text;
  EXPECT_EQ(std::system(("promtool check metrics < " + file + " > " + file + ".out 2>&1").c_str()),
            0)
      << ReadFile(file + ".out");
}

// The same node with --dcgm-metric-aliases.
class DcgmMetricsTest : public HamiMetricsTest {
 protected:
  void SetUp() override {
    dcgm_aliases_ = true;
    HamiMetricsTest::SetUp();
  }
};

TEST_F(DcgmMetricsTest, SliceCountersAndDcgmAliases) {
  ASSERT_TRUE(kubelet_->WaitForDevices([](const auto& d) { return d.size() == 8; }, 5000));
  AllocatePod("trainer", {"main"}, "main", {uuids_[0], 4096, 30});
  // Two processes of the slice as libvgpu.so leaves them: one gone (its slot released, so its
  // counters are folded into the slice's totals), one alive.
  const std::string region_path = root_ + "/slices/uid-trainer_main/ml_trainer_main/region";
  shm::Mapping mapping;
  ASSERT_EQ(shm::Mapping::OpenExisting(region_path.c_str(), true, &mapping), shm::RegionError::kOk);
  shm::Region* region = mapping.region();
  shm::ProcIdentity self = shm::CurrentProcIdentity();
  int slot = -1;
  ASSERT_EQ(shm::ClaimSlot(region, self, &slot), shm::RegionError::kOk);
  shm::ProcCounters& gone = region->slots[slot].counters;
  gone.launches = 1000;
  gone.copy_bytes[shm::kCopyKindHostToDevice] = 64 << 20;
  gone.allocations = 10;
  gone.frees = 10;
  ASSERT_EQ(shm::Charge(region, slot, 0, 3ULL << 30, shm::kNoLimit, self), shm::RegionError::kOk);
  shm::ReleaseSlot(region, slot, self);
  ASSERT_EQ(shm::ClaimSlot(region, self, &slot), shm::RegionError::kOk);
  shm::ProcCounters& live = region->slots[slot].counters;
  live.launches = 234;
  live.graph_launches = 5;
  live.copy_bytes[shm::kCopyKindDeviceToHost] = 1 << 20;
  live.copy_bytes[shm::kCopyKindPeer] = 4096;
  live.allocations = 3;
  live.gate_wait_ns = 1'500'000'000;
  live.busy_ns = 2'250'000'000;
  region->header.telemetry.flags = shm::kTelemetryCounting;
  region->header.control.oom_refusals = 7;
  ASSERT_EQ(shm::Charge(region, slot, 0, 1ULL << 30, shm::kNoLimit, self), shm::RegionError::kOk);

  daemon_->SampleNow();
  const std::string text = daemon_->Metrics();
  const Page page = Parse(text);
  auto find = [&](const std::string& name, const LabelMap& match) -> const Sample* {
    auto it = page.series.find(name);
    if (it == page.series.end()) return nullptr;
    for (const Sample& s : it->second) {
      bool all = true;
      for (const auto& [k, v] : match) all &= s.labels.count(k) && s.labels.at(k) == v;
      if (all) return &s;
    }
    return nullptr;
  };
  auto value = [&](const std::string& name, LabelMap match = {}) {
    match["pod"] = "trainer";
    const Sample* s = find(name, match);
    EXPECT_NE(s, nullptr) << name << " missing";
    return s == nullptr ? -1.0 : s->value;
  };
  const Sample* launches = find("vgpu_slice_kernel_launches_total", {{"pod", "trainer"}});
  ASSERT_NE(launches, nullptr) << text;
  EXPECT_EQ(launches->value, 1234);
  EXPECT_EQ(launches->labels.at("namespace"), "ml");
  EXPECT_EQ(launches->labels.at("container"), "main");
  EXPECT_EQ(launches->labels.at("uuid"), uuids_[0]);
  EXPECT_EQ(page.types.at("vgpu_slice_kernel_launches_total"), "counter");
  EXPECT_EQ(value("vgpu_slice_graph_launches_total"), 5);
  EXPECT_EQ(value("vgpu_slice_copy_bytes_total", {{"kind", "host_to_device"}}), 64 << 20);
  EXPECT_EQ(value("vgpu_slice_copy_bytes_total", {{"kind", "device_to_host"}}), 1 << 20);
  EXPECT_EQ(value("vgpu_slice_copy_bytes_total", {{"kind", "device_to_device"}}), 0);
  EXPECT_EQ(value("vgpu_slice_copy_bytes_total", {{"kind", "peer"}}), 4096);
  EXPECT_EQ(value("vgpu_slice_memory_allocations_total"), 13);
  EXPECT_EQ(value("vgpu_slice_memory_frees_total"), 10);
  EXPECT_EQ(value("vgpu_slice_oom_refusals_total"), 7);
  EXPECT_DOUBLE_EQ(value("vgpu_slice_gate_wait_seconds_total"), 1.5);
  EXPECT_DOUBLE_EQ(value("vgpu_slice_gpu_busy_seconds_total"), 2.25);
  EXPECT_EQ(value("vgpu_slice_memory_peak_bytes"), static_cast<double>(3ULL << 30));
  EXPECT_EQ(value("vgpu_slice_memory_charged_bytes"), static_cast<double>(1ULL << 30));
  // dcgm-exporter's names, units and labels: per GPU, and per pod for utilization and memory.
  const Sample* util = find("DCGM_FI_DEV_GPU_UTIL", {{"UUID", uuids_[0]}, {"modelName", kModel}});
  ASSERT_NE(util, nullptr);
  EXPECT_DOUBLE_EQ(util->value, 37);
  EXPECT_EQ(util->labels.at("gpu"), "0");
  EXPECT_EQ(util->labels.at("device"), "nvidia0");
  EXPECT_EQ(util->labels.at("Hostname"), "gpu-node-7");
  EXPECT_EQ(find("DCGM_FI_DEV_FB_USED", {{"UUID", uuids_[1]}})->value, 4096);  // MiB
  EXPECT_EQ(find("DCGM_FI_DEV_FB_FREE", {{"UUID", uuids_[1]}})->value, 40960 - 4096);
  EXPECT_DOUBLE_EQ(find("DCGM_FI_DEV_MEM_COPY_UTIL", {{"UUID", uuids_[0]}})->value, 12);
  EXPECT_EQ(find("DCGM_FI_DEV_GPU_TEMP", {{"UUID", uuids_[0]}})->value, 61);
  EXPECT_EQ(find("DCGM_FI_DEV_POWER_USAGE", {{"UUID", uuids_[0]}})->value, 245.5);
  // dcgm-exporter's default counters from the other readings, in its units and types.
  auto dcgm = [&](const std::string& name) {
    const Sample* s = find(name, {{"UUID", uuids_[0]}});
    EXPECT_NE(s, nullptr) << name << " missing";
    return s == nullptr ? -1.0 : s->value;
  };
  EXPECT_EQ(dcgm("DCGM_FI_DEV_SM_CLOCK"), 1755);  // MHz
  EXPECT_EQ(dcgm("DCGM_FI_DEV_MEM_CLOCK"), 2619);
  EXPECT_EQ(dcgm("DCGM_FI_DEV_MEMORY_TEMP"), 54);
  EXPECT_DOUBLE_EQ(dcgm("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), 123456789);  // mJ
  EXPECT_EQ(page.types.at("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), "counter");
  EXPECT_DOUBLE_EQ(dcgm("DCGM_FI_DEV_PCIE_TX_THROUGHPUT"), 2000);  // KB/s
  EXPECT_DOUBLE_EQ(dcgm("DCGM_FI_DEV_PCIE_RX_THROUGHPUT"), 300);
  EXPECT_EQ(dcgm("DCGM_FI_DEV_PCIE_REPLAY_COUNTER"), 2);
  EXPECT_DOUBLE_EQ(dcgm("DCGM_FI_DEV_ENC_UTIL"), 5);  // %
  EXPECT_DOUBLE_EQ(dcgm("DCGM_FI_DEV_DEC_UTIL"), 25);
  EXPECT_EQ(dcgm("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"), 4);
  EXPECT_EQ(dcgm("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"), 1);
  EXPECT_EQ(dcgm("DCGM_FI_DEV_ROW_REMAP_FAILURE"), 0);
  EXPECT_EQ(
      find("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", {{"UUID", uuids_[0]}})->labels.count("type"),
      0u);
  // No XID since the daemon started (the fake backend delivers events): 0, as DCGM says.
  EXPECT_EQ(dcgm("DCGM_FI_DEV_XID_ERRORS"), 0);
  const Sample* pod_fb = find("DCGM_FI_DEV_FB_USED", {{"pod", "trainer"}});
  ASSERT_NE(pod_fb, nullptr);
  EXPECT_EQ(pod_fb->labels.at("namespace"), "ml");
  EXPECT_EQ(pod_fb->labels.at("container"), "main");
  EXPECT_EQ(pod_fb->labels.at("UUID"), uuids_[0]);
  EXPECT_EQ(page.types.at("DCGM_FI_DEV_GPU_UTIL"), "gauge");
  // GPM, ours and under dcgm-exporter's profiling names (ratios, bytes/s); none on GPU 1.
  EXPECT_DOUBLE_EQ(find("vgpu_gpu_gpm_sm_activity_ratio", {{"uuid", uuids_[0]}})->value, 0.42);
  EXPECT_DOUBLE_EQ(find("DCGM_FI_PROF_SM_ACTIVE", {{"UUID", uuids_[0]}})->value, 0.42);
  EXPECT_DOUBLE_EQ(find("DCGM_FI_PROF_DRAM_ACTIVE", {{"UUID", uuids_[0]}})->value, 0.3);
  EXPECT_DOUBLE_EQ(find("DCGM_FI_PROF_PCIE_TX_BYTES", {{"UUID", uuids_[0]}})->value, 1e9);
  EXPECT_EQ(find("DCGM_FI_PROF_SM_ACTIVE", {{"UUID", uuids_[1]}}), nullptr);
  EXPECT_EQ(find("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", {}), nullptr);  // not given: not written
  shm::ReleaseSlot(region, slot, self);
  // promtool accepts the page; its only lint complaints are dcgm-exporter's own names (UUID,
  // modelName, Hostname are not snake_case; its counters have no "_total" and one names its
  // type), which its dashboards query.
  const std::string file = root_ + "/telemetry.prom";
  std::ofstream(file) << text;
  int rc = std::system(("promtool check metrics < " + file + " > " + file + ".out 2>&1").c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  const std::string lint = ReadFile(file + ".out");
  EXPECT_TRUE(WEXITSTATUS(rc) == 0 || WEXITSTATUS(rc) == 3) << lint;  // 3: lint only
  std::istringstream lines(lint);
  std::string line;
  while (std::getline(lines, line)) {
    EXPECT_EQ(line.rfind("DCGM_FI_", 0), 0u) << line;
    EXPECT_TRUE(line.find("snake_case") != std::string::npos ||
                line.find("counter metrics should have \"_total\" suffix") != std::string::npos ||
                line.find("metric name should not include type 'counter'") != std::string::npos)
        << line;
  }
}

}  // namespace
}  // namespace vgpu::node
