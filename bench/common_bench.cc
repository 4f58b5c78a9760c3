// Micro-benchmarks of src/common: parsing is on the interception library's start-up path.
#include <benchmark/benchmark.h>

#include "common/rng.h"
#include "common/units.h"

static void BM_ParseByteSize(benchmark::State& state) {
  for (auto _ : state) {
    auto p = vgpu::ParseByteSizeRaw("4096m");
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_ParseByteSize);

static void BM_RngUniformInt(benchmark::State& state) {
  vgpu::Rng rng(42);
  for (auto _ : state) benchmark::DoNotOptimize(rng.UniformInt(1213));
}
BENCHMARK(BM_RngUniformInt);

BENCHMARK_MAIN();
