// The node daemon's online analyses (node/rules/online_analysis.h) on a node with many slices: the
// cost of one round (ObserveRound + Round, as the daemon calls them) once every series has hours of
// history. Slices are spread over 8 GPUs; each has a bursty utilization (busy stretches among
// zeros, as two thirds of the bundled pods' samples are) and a memory that is flat between
// allocation jumps; the rounds are on a simulated clock, one per 60 s slot.
//
//   bench_node_analysis [--slices N] [--hours H] [--rounds R]
//     prints the mean and the largest CPU time of a round over R rounds (default 120) after H
//     hours (default 4) of history for N slices (default 100)
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "node/rules/online_analysis.h"

namespace {

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

struct Slice {
  std::string target;
  bool busy = false;
  double level = 0, memory = 0;
};

}  // namespace

int main(int argc, char** argv) {
  int slices = 100, hours = 4, rounds = 120;
  for (int i = 1; i + 1 < argc; i += 2) {
    const int v = std::atoi(argv[i + 1]);
    if (v <= 0) {
      std::fprintf(stderr, "bench_node_analysis: %s: \"%s\" is not a positive number\n", argv[i],
                   argv[i + 1]);
      return 2;
    }
    if (!std::strcmp(argv[i], "--slices")) {
      slices = v;
    } else if (!std::strcmp(argv[i], "--hours")) {
      hours = v;
    } else if (!std::strcmp(argv[i], "--rounds")) {
      rounds = v;
    } else {
      std::fprintf(stderr, "bench_node_analysis: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  vgpu::SimulatedClock clock(0);
  vgpu::node::OnlineOptions o;  // the daemon's defaults (60 s step)
  vgpu::node::OnlineAnalysis online(o, &clock);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Slice> s(static_cast<size_t>(slices));
  for (int i = 0; i < slices; ++i) {
    s[i].target = "gpu" + std::to_string(i % 8) + "/slice-" + std::to_string(i);
    s[i].memory = (4 + 4 * u(rng)) * (1ULL << 30);
  }
  const int history = hours * 60;
  double total = 0, worst = 0;
  size_t anomalies = 0;
  for (int k = 0; k < history + rounds; ++k) {
    clock.AdvanceTo(static_cast<int64_t>(k) * o.step_ns);
    std::vector<std::tuple<std::string, std::string, double>> samples;
    for (int g = 0; g < 8; ++g) samples.emplace_back("gpu" + std::to_string(g), "slices", 1);
    for (Slice& x : s) {
      if (u(rng) < 0.05) x.busy = !x.busy, x.level = 30 + 60 * u(rng);
      if (u(rng) < 0.01) x.memory += (u(rng) < 0.5 ? 1 : -0.5) * (1ULL << 30);
      samples.emplace_back(x.target, "util", x.busy ? x.level + 5 * u(rng) : 0);
      samples.emplace_back(x.target, "memory_used_bytes", std::max(0.0, x.memory));
    }
    const double t0 = CpuSeconds();
    online.ObserveRound(samples, {});
    anomalies += online.Round().size();
    const double dt = CpuSeconds() - t0;
    if (k >= history) {
      total += dt;
      worst = std::max(worst, dt);
    }
  }
  std::printf(
      "%d slices, %d h of history at 60 s, %zu series: per round mean %.2f ms, max %.2f "
      "ms CPU over %d rounds (%zu anomalies reported in all)\n",
      slices, hours, online.series(), 1e3 * total / rounds, 1e3 * worst, rounds, anomalies);
  return 0;
}
