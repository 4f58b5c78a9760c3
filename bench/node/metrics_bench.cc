// The node daemon's /metrics page (node/metrics/metrics.h CollectMetrics) on a node with many
// slices: N slices spread over 8 GPUs, each with its accounting region holding one live process
// whose counters are set (so every per-slice series is written), the GPUs' samples set. What is
// timed is one whole scrape: reading every region (its seqlock'ed counters over all 1024 slots),
// the arbiters and the slices' records, and rendering the text.
//
//   bench_node_metrics [Google Benchmark flags]   the benchmark, for 10, 100 and 400 slices
//   bench_node_metrics --check                    asserts that a scrape of 100 slices takes
//                                                 under 5 ms of CPU (median of 50 scrapes: on a
//                                                 shared machine the wall time also counts the
//                                                 waits for a CPU); prints CPU and wall times
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "node/metrics/metrics.h"
#include "node/node_state.h"
#include "node/slice.h"
#include "node/slice_region.h"
#include "shm/proc_identity.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"

namespace vgpu::node {
namespace {

constexpr int kGpus = 8;

// A node of kGpus GPUs with `slices` slices and their regions, under a private directory.
class Node {
 public:
  explicit Node(int slices) {
    root_ = "/tmp/vgpu-bench-metrics-" + std::to_string(getpid()) + "-" + std::to_string(slices);
    std::filesystem::remove_all(root_);
    std::vector<device::DeviceInfo> devices;
    for (int i = 0; i < kGpus; ++i) {
      device::DeviceInfo d;
      d.index = i;
      d.uuid = "GPU-bench-" + std::to_string(i);
      d.name = "NVIDIA H100 80GB HBM3";
      d.memory_total_bytes = 80ULL << 30;
      devices.push_back(d);
    }
    state_ = std::make_unique<NodeState>(devices, 100, HealthRules{});
    for (int i = 0; i < kGpus; ++i) {
      device::DeviceSample s;
      s.memory_used_bytes = 10ULL << 30;
      s.sm_utilization = 0.5;
      s.memory_bandwidth_utilization = 0.2;
      s.temperature_celsius = 60;
      s.power_watts = 300;
      state_->StoreSample(i, s);
    }
    SliceLayout layout;
    layout.root = root_ + "/slices";
    layout.host_libvgpu = root_ + "/libvgpu.so";
    layout.arbiter_dir = root_ + "/arbiter";
    slices_ = std::make_unique<SliceManager>(layout);
    ok_ = slices_->Init().ok();
    const shm::ProcIdentity self = shm::CurrentProcIdentity();
    for (int n = 0; n < slices && ok_; ++n) {
      ContainerSlice spec;
      spec.pod_ns = "bench";
      spec.pod_name = "pod-" + std::to_string(n);
      spec.pod_uid = "uid-" + std::to_string(n);
      spec.container = "main";
      SliceDevice d;
      d.uuid = devices[n % kGpus].uuid;
      d.node_index = n % kGpus;
      d.memory_bytes = 4ULL << 30;
      d.cores = 10;
      spec.devices.push_back(d);
      auto record = slices_->Create(spec, 1000 + n);
      if (!record) {
        std::fprintf(stderr, "bench_node_metrics: %s\n", record.error().ToString().c_str());
        ok_ = false;
        break;
      }
      // One live process (this one) with counters, as libvgpu.so leaves it.
      shm::Mapping m;
      if (shm::Mapping::OpenExisting(record->region_path.c_str(), true, &m) !=
          shm::RegionError::kOk) {
        ok_ = false;
        break;
      }
      int slot = -1;
      shm::Region* r = m.region();
      if (shm::ClaimSlot(r, self, &slot) != shm::RegionError::kOk ||
          shm::Charge(r, slot, 0, 1ULL << 30, shm::kNoLimit, self) != shm::RegionError::kOk) {
        ok_ = false;
        break;
      }
      r->header.telemetry.flags = shm::kTelemetryCounting;
      r->slots[slot].counters.launches = 1000 + n;
      r->slots[slot].counters.copy_bytes[0] = 1ULL << 30;
      r->slots[slot].counters.busy_ns = 1'000'000'000;
    }
    sources_.state = state_.get();
    sources_.slices = slices_.get();
    sources_.node_name = "bench-node";
    sources_.arbiter_dir = layout.arbiter_dir;
    sources_.version = "bench";
    sources_.dcgm_aliases = true;
    sources_.regions = &regions_;  // as the daemon scrapes
  }
  ~Node() { std::filesystem::remove_all(root_); }

  bool ok() const { return ok_; }
  std::string Scrape() const { return CollectMetrics(sources_); }

 private:
  std::string root_;
  std::unique_ptr<NodeState> state_;
  std::unique_ptr<SliceManager> slices_;
  RegionCache regions_;
  MetricsSources sources_;
  bool ok_ = false;
};

void Scrape(benchmark::State& state) {
  Node node(static_cast<int>(state.range(0)));
  if (!node.ok()) {
    state.SkipWithError("cannot set up the slices");
    return;
  }
  size_t bytes = 0;
  for (auto _ : state) {
    std::string page = node.Scrape();
    bytes = page.size();
    benchmark::DoNotOptimize(page);
  }
  state.counters["page_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(Scrape)->Arg(10)->Arg(100)->Arg(400)->Unit(benchmark::kMillisecond);

double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

int Check() {
  Node node(100);
  if (!node.ok()) return 1;
  node.Scrape();  // the first scrape maps the regions (RegionCache); later ones reuse them
  std::vector<double> wall, cpu;
  size_t bytes = 0;
  for (int i = 0; i < 50; ++i) {
    const double c0 = ThreadCpuMs();
    auto t0 = std::chrono::steady_clock::now();
    std::string page = node.Scrape();
    auto t1 = std::chrono::steady_clock::now();
    cpu.push_back(ThreadCpuMs() - c0);
    bytes = page.size();
    wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  const double median = cpu[cpu.size() / 2];
  std::printf(
      "scrape of 100 slices on 8 GPUs (%zu bytes): CPU median %.2f ms, fastest %.2f ms; wall "
      "median %.2f ms, fastest %.2f ms (budget 5 ms of CPU)\n",
      bytes, median, cpu.front(), wall[wall.size() / 2], wall.front());
  return median < 5.0 ? 0 : 1;
}

}  // namespace
}  // namespace vgpu::node

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--check") == 0) return vgpu::node::Check();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
