// Placement engine benchmarks (one core, no threads):
//
//   BM_Snapshot130/<policy>   one seed of the FGD paper's 130% experiment on the default trace
//                             (1213 nodes, ~10.8k pods): load-free, cluster build + plan + all
//                             decisions + bookkeeping. Target: < 1 s for fgd and default.
//   BM_Decision10x/<policy>   the same experiment on a synthetic 10x cluster (the node list ten
//                             times, 12,130 nodes; the pod list ten times, ~108k pods). Each
//                             Schedule() call is timed; counters p50_us / p99_us / max_us give the
//                             per-decision latency (p99_cpu_us / max_cpu_us: the same from the
//                             thread's CPU time, which other processes' load does not inflate).
//                             Target: p99 < 5 ms.
//
// Run: build/bin/bench_sched [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>

#include "common/rng.h"
#include "sched/cluster.h"
#include "sched/registry.h"
#include "sched/scheduler.h"
#include "sim/snapshot.h"
#include "sim/trace.h"

namespace {

using namespace vgpu;

const std::string kData = std::string(VGPU_SOURCE_DIR) + "/data/alibaba-gpu-v2023/";

struct Trace {
  sched::ModelRegistry models;
  sim::SnapshotInput input;
};

// The default trace, replicated `copies` times (nodes and pods renamed "<name>-<k>").
const Trace& LoadDefault(int copies) {
  static std::map<int, std::unique_ptr<Trace>> cache;
  auto& slot = cache[copies];
  if (slot) return *slot;
  slot = std::make_unique<Trace>();
  auto nodes = sim::LoadNodeList(kData + "openb_node_list_gpu_node.csv", &slot->models);
  auto pods = sim::LoadPodList(kData + "openb_pod_list_default.csv", slot->models);
  if (!nodes || !pods) {
    std::fprintf(stderr, "cannot load the bundled trace from %s\n", kData.c_str());
    std::exit(1);
  }
  std::vector<sched::NodeSpec> all_nodes;
  std::vector<std::pair<std::string, sched::PodRequest>> all_pods;
  for (int k = 0; k < copies; ++k) {
    const std::string suffix = copies == 1 ? "" : "-" + std::to_string(k);
    for (sched::NodeSpec n : *nodes) {
      n.name += suffix;
      all_nodes.push_back(std::move(n));
    }
    for (const sim::TracePod& p : *pods) all_pods.emplace_back(p.name + suffix, p.request);
  }
  slot->input = sim::MakeSnapshotInput(std::move(all_nodes), std::move(all_pods), &slot->models,
                                       "openb_pod_list_default");
  return *slot;
}

void BM_Snapshot130(benchmark::State& state, const std::string& policy) {
  const Trace& t = LoadDefault(1);
  sched::PolicyArgs args;
  args.target_workload = t.input.target_workload;
  args.models = &t.models;
  int64_t pods = 0;
  uint64_t seed = 42;
  for (auto _ : state) {
    auto r = sim::RunSnapshot(t.input, policy, args, seed++, 1.3);
    if (!r) {
      state.SkipWithError(r.error().message().c_str());
      return;
    }
    pods += r->pods;
  }
  state.counters["pods_per_s"] =
      benchmark::Counter(static_cast<double>(pods), benchmark::Counter::kIsRate);
}

double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

void BM_Decision10x(benchmark::State& state, const std::string& policy) {
  const Trace& t = LoadDefault(10);
  sched::PolicyArgs args;
  args.target_workload = t.input.target_workload;
  args.models = &t.models;
  std::vector<double> micros;
  std::vector<double> cpu_micros;  // the thread's CPU time: immune to other processes' load
  for (auto _ : state) {
    auto made = sched::BuiltinPolicies().Create(policy, args);
    sched::Cluster cluster;
    for (const auto& n : t.input.nodes) (void)cluster.AddNode(n);
    Rng rng(42);
    sim::ArrivalPlan plan = sim::PlanArrivals(t.input, 1.3, rng);
    auto s = sched::Scheduler::Create(&cluster, std::move(*made), plan.node_order);
    micros.clear();
    micros.reserve(plan.pods.size());
    cpu_micros.clear();
    cpu_micros.reserve(plan.pods.size());
    double total = 0;
    for (size_t i = 0; i < plan.pods.size(); ++i) {
      const sched::PodRequest& r = plan.pods[i];
      const double cpu_start = ThreadCpuMicros();
      const auto start = std::chrono::steady_clock::now();
      s->ObservePod(r);
      auto p = s->Schedule(r, rng);
      const double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count();
      micros.push_back(us);
      cpu_micros.push_back(ThreadCpuMicros() - cpu_start);
      total += us;
      if (p) (void)s->Reserve(i, r, *p);
    }
    state.SetIterationTime(total / 1e6);
  }
  std::sort(micros.begin(), micros.end());
  auto pct = [&](double q) {
    return micros[static_cast<size_t>(q * static_cast<double>(micros.size() - 1))];
  };
  state.counters["nodes"] = static_cast<double>(t.input.nodes.size());
  state.counters["decisions"] = static_cast<double>(micros.size());
  state.counters["p50_us"] = pct(0.50);
  state.counters["p99_us"] = pct(0.99);
  state.counters["max_us"] = micros.back();
  std::sort(cpu_micros.begin(), cpu_micros.end());
  state.counters["p99_cpu_us"] =
      cpu_micros[static_cast<size_t>(0.99 * static_cast<double>(cpu_micros.size() - 1))];
  state.counters["max_cpu_us"] = cpu_micros.back();
}

void RegisterAll() {
  for (const char* p : {"fgd", "default", "cafgd", "fgd-online", "bestfit", "dotprod", "packing",
                        "clustering", "random", "hami-binpack", "hami-spread"}) {
    benchmark::RegisterBenchmark((std::string("BM_Snapshot130/") + p).c_str(), BM_Snapshot130, p)
        ->Unit(benchmark::kMillisecond);
  }
  for (const char* p : {"fgd", "default", "cafgd", "fgd-online", "bestfit"}) {
    benchmark::RegisterBenchmark((std::string("BM_Decision10x/") + p).c_str(), BM_Decision10x, p)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
