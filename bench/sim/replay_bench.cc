// Time-based replay benchmarks (one core, no threads), on the default trace:
//
//   BM_ReplayFullCluster/<policy>   the 7,255 replayed pods at their real pace on the full cluster
//                                   (1213 nodes), shared allocation, FIFO: nothing waits, so this
//                                   is one decision per pod plus the event loop. Target: < 1 s.
//   BM_ReplayOverloaded/<queue>/<alloc>   real pace on a 30-GPU stratified sample (scale 0.005):
//                                   thousands of pods wait; backfill scans the queue at every
//                                   departure.
//   BM_ReplayStress/<queue>         the trace ten times over (72,550 pods, arrivals repeated) on
//                                   a 2% sample (24 nodes): about 60,000 pods wait at once; checks
//                                   that the queue scan stays linear.
//
// Run: build/bin/bench_sim [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "sim/replay.h"

namespace {

using namespace vgpu;

const std::string kData = std::string(VGPU_SOURCE_DIR) + "/data/alibaba-gpu-v2023/";

struct Loaded {
  sched::ModelRegistry models;
  sim::ReplayInput input;
  int64_t span_us = 0;
};

const Loaded& Load(int copies) {
  static std::map<int, std::unique_ptr<Loaded>> cache;
  auto& slot = cache[copies];
  if (slot) return *slot;
  slot = std::make_unique<Loaded>();
  auto nodes = sim::LoadNodeList(kData + "openb_node_list_gpu_node.csv", &slot->models);
  auto pods = sim::LoadTimedPodList(kData + "openb_pod_list_default.csv", slot->models);
  if (!nodes || !pods) {
    std::fprintf(stderr, "cannot load the bundled trace from %s\n", kData.c_str());
    std::exit(1);
  }
  auto jobs = sim::MakeJobs(*pods, sim::JobOptions{});
  std::sort(nodes->begin(), nodes->end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  slot->input.nodes = std::move(*nodes);
  slot->input.models = &slot->models;
  for (const sim::ReplayJob& j : jobs->jobs) {
    for (int k = 0; k < copies; ++k) slot->input.jobs.push_back(j);
  }
  slot->span_us = jobs->span_us;
  return *slot;
}

void RunOne(benchmark::State& state, const Loaded& t, sim::ReplayConfig c) {
  c.horizon_us = t.span_us;
  c.step_us = t.span_us / 400;
  int64_t waited = 0;
  for (auto _ : state) {
    auto r = sim::RunReplay(t.input, c);
    if (!r) {
      state.SkipWithError(r.error().message().c_str());
      return;
    }
    waited = r->waited;
    benchmark::DoNotOptimize(r->completed);
  }
  state.counters["pods"] = static_cast<double>(t.input.jobs.size());
  state.counters["waited"] = static_cast<double>(waited);
}

void BM_ReplayFullCluster(benchmark::State& state, const char* policy) {
  sim::ReplayConfig c;
  c.policy = policy;
  RunOne(state, Load(1), c);
}
BENCHMARK_CAPTURE(BM_ReplayFullCluster, default, "default")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReplayFullCluster, fgd, "fgd")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReplayFullCluster, bestfit, "bestfit")->Unit(benchmark::kMillisecond);

void BM_ReplayOverloaded(benchmark::State& state, sim::QueueDiscipline q, sim::Allocation a) {
  sim::ReplayConfig c;
  c.policy = "default";
  c.queue = q;
  c.allocation = a;
  c.cluster_scale = 0.005;
  RunOne(state, Load(1), c);
}
BENCHMARK_CAPTURE(BM_ReplayOverloaded, fifo / shared, sim::QueueDiscipline::kFifo,
                  sim::Allocation::kShared)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReplayOverloaded, backfill / shared, sim::QueueDiscipline::kBackfill,
                  sim::Allocation::kShared)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReplayOverloaded, backfill / whole, sim::QueueDiscipline::kBackfill,
                  sim::Allocation::kWhole)
    ->Unit(benchmark::kMillisecond);

void BM_ReplayStress(benchmark::State& state, sim::QueueDiscipline q) {
  sim::ReplayConfig c;
  c.policy = "bestfit";
  c.queue = q;
  c.cluster_scale = 0.02;
  RunOne(state, Load(10), c);
}
BENCHMARK_CAPTURE(BM_ReplayStress, fifo, sim::QueueDiscipline::kFifo)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_ReplayStress, backfill, sim::QueueDiscipline::kBackfill)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
