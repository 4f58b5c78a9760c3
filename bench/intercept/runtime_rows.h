// The CUDA runtime rows of bench_intercept: what libvgpu.so adds to cudaLaunchKernel and to a
// cudaMalloc + cudaFree pair of a program built with nvcc (runtime_bench.cu), on the minimal fake
// driver (fake_libcuda_runtime.cc) and on the simulated driver (src/simgpu).
//
// libvgpu.so is in a process from its start or not at all, so "with" and "without" are two
// processes: each round runs the program once without libvgpu and once with it preloaded (a
// 64 GiB slice, no compute limit), on each driver. A row reports the fastest time of all
// rounds without libvgpu and with it, their difference (the time added, compared with the
// budget, as the driver API rows compare the fastest of their repetitions), and the median and
// range of the per-round differences (how much one round can be trusted).
#pragma once

#include <string>
#include <vector>

namespace vgpu::bench {

struct RuntimeRowsOptions {
  std::string program;     // intercept_runtime_bench; empty or missing: nvcc was not found
  std::string libvgpu;     // libvgpu.so
  std::string fake_dir;    // directory of the fake libcuda.so.1 over the simulated driver
  std::string simgpu_dir;  // directory of the simulated libcuda.so.1; empty: not built
  int rounds = 5;
  int reps = 15;       // repetitions per process (the program reports the fastest)
  int iters = 200000;  // calls per repetition
  bool budgets = true;
};

// Per-round times of one row (ns per call; the same length).
struct RowSummary {
  double without = 0;       // fastest over the rounds, without libvgpu
  double with = 0;          // fastest over the rounds, with libvgpu
  double added = 0;         // with - without
  double round_median = 0;  // median of (with - without) per round
  double round_min = 0;
  double round_max = 0;
};
RowSummary Summarize(const std::vector<double>& without, const std::vector<double>& with);

// Runs the rounds and prints one line per row (or one line saying why the rows are skipped).
// Returns 0 when every row is within its budget (or budgets are off, or the rows are skipped),
// 1 when one is over its budget or a run fails.
int RunRuntimeRows(const RuntimeRowsOptions& options);

}  // namespace vgpu::bench
