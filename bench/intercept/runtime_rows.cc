#include "runtime_rows.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "spawn.h"

namespace vgpu::bench {
namespace {

constexpr double kLaunchBudgetNs = 15;
constexpr double kPairBudgetNs = 200;

struct Driver {
  const char* name;  // in the rows: "fake driver", "simulated driver"
  std::string dir;   // put first on LD_LIBRARY_PATH
  bool fake;         // the fake reports the calls that reached it
};

// One process's result.
struct Sample {
  double launch = 0;
  double pair = 0;
  unsigned long long fake_launches = 0;
  unsigned long long fake_allocs = 0;
  bool fake_seen = false;
};

bool Parse(const std::string& out, Sample* s) {
  std::istringstream in(out);
  std::string key;
  bool launch = false;
  bool pair = false;
  while (in >> key) {
    if (key == "launch") {
      launch = static_cast<bool>(in >> s->launch);
    } else if (key == "pair") {
      pair = static_cast<bool>(in >> s->pair);
    } else if (key == "fake_calls") {
      s->fake_seen = static_cast<bool>(in >> s->fake_launches >> s->fake_allocs);
    }
  }
  return launch && pair;
}

// Runs the program once on `driver`, with libvgpu.so preloaded or not.
bool RunOnce(const RuntimeRowsOptions& o, const Driver& driver, bool with_libvgpu,
             const std::string& tag, Sample* s) {
  std::vector<std::string> add = {
      "LD_LIBRARY_PATH=" + driver.dir,
      "VGPU_SIMGPU_STATE=/tmp/vgpu-bench-rt-" + tag + ".state",
      "VGPU_SIMGPU_LOG_LEVEL=1",
      "LIBCUDA_LOG_LEVEL=1",
  };
  if (with_libvgpu) {
    add.push_back("LD_PRELOAD=" + o.libvgpu);
    add.push_back("CUDA_DEVICE_MEMORY_LIMIT=64g");
    add.push_back("CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/vgpu-bench-rt-" + tag + ".region");
    add.push_back("VGPU_CONTEXT_OVERHEAD=0");
  }
  std::string out;
  int rc =
      RunProgram({o.program, "--reps", std::to_string(o.reps), "--iters", std::to_string(o.iters)},
                 {"LD_PRELOAD", "LD_LIBRARY_PATH", "VGPU_LIMITS_FILE", "VGPU_REGION"},
                 {"CUDA_", "VGPU_", "LIBCUDA_"}, add, &out);
  const char* how = with_libvgpu ? "with libvgpu" : "without libvgpu";
  if (rc != 0 || !Parse(out, s)) {
    std::printf("runtime rows: %s on the %s %s failed (exit %d): %s\n", o.program.c_str(),
                driver.name, how, rc, out.c_str());
    return false;
  }
  // On the fake, every measured call must have reached the fake's functions, or the row would
  // measure the simulated driver's instead.
  unsigned long long calls = static_cast<unsigned long long>(o.reps) * o.iters;
  if (driver.fake && (!s->fake_seen || s->fake_launches < calls || s->fake_allocs < calls)) {
    std::printf(
        "runtime rows: on the fake driver %s, %llu launches and %llu allocations of %llu reached "
        "the fake's functions\n",
        how, s->fake_launches, s->fake_allocs, calls);
    return false;
  }
  return true;
}

bool Row(const char* call, const Driver& d, const std::vector<double>& without,
         const std::vector<double>& with, double budget, bool budgets) {
  RowSummary r = Summarize(without, with);
  bool ok = !budgets || r.added <= budget;
  std::printf(
      "%s, %s: without libvgpu %.1f ns, with %.1f ns, added %.1f ns (budget %.0f)%s; per round "
      "%.1f ns median, %.1f to %.1f\n",
      call, d.name, r.without, r.with, r.added, budget, ok ? "" : " OVER BUDGET", r.round_median,
      r.round_min, r.round_max);
  return ok;
}

}  // namespace

RowSummary Summarize(const std::vector<double>& without, const std::vector<double>& with) {
  RowSummary r;
  if (without.empty() || without.size() != with.size()) return r;
  r.without = *std::min_element(without.begin(), without.end());
  r.with = *std::min_element(with.begin(), with.end());
  r.added = r.with - r.without;
  std::vector<double> d;
  for (size_t i = 0; i < with.size(); ++i) d.push_back(with[i] - without[i]);
  std::sort(d.begin(), d.end());
  size_t n = d.size();
  r.round_median = n % 2 == 1 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
  r.round_min = d.front();
  r.round_max = d.back();
  return r;
}

int RunRuntimeRows(const RuntimeRowsOptions& o) {
  if (o.program.empty() || access(o.program.c_str(), X_OK) != 0) {
    std::printf(
        "runtime rows skipped: the CUDA runtime program %s was not built (nvcc was not found when "
        "the project was configured)\n",
        o.program.empty() ? "intercept_runtime_bench" : o.program.c_str());
    return 0;
  }
  if (o.simgpu_dir.empty()) {
    std::printf(
        "runtime rows skipped: the simulated GPU was not built (the runtime needs it, also under "
        "the fake driver)\n");
    return 0;
  }
  std::vector<Driver> drivers = {{"fake driver", o.fake_dir, true},
                                 {"simulated driver", o.simgpu_dir, false}};
  std::printf(
      "CUDA runtime (%s): fastest of %d x %d calls per process, %d rounds of one process without "
      "libvgpu and one with it\n",
      o.program.c_str(), o.reps, o.iters, o.rounds);
  std::fflush(stdout);
  std::string tag = std::to_string(getpid());
  // Per driver, per-round times without ([0]) and with ([1]) libvgpu.
  struct Times {
    std::vector<double> launch[2];
    std::vector<double> pair[2];
  };
  std::vector<Times> times(drivers.size());
  bool ran = true;
  for (int round = 0; round < o.rounds && ran; ++round) {
    for (size_t d = 0; d < drivers.size() && ran; ++d) {
      for (int with = 0; with < 2 && ran; ++with) {
        Sample s;
        ran = RunOnce(o, drivers[d], with == 1, tag, &s);
        times[d].launch[with].push_back(s.launch);
        times[d].pair[with].push_back(s.pair);
      }
    }
  }
  unlink(("/tmp/vgpu-bench-rt-" + tag + ".state").c_str());
  unlink(("/tmp/vgpu-bench-rt-" + tag + ".region").c_str());
  if (!ran) return 1;
  bool ok = true;
  for (size_t d = 0; d < drivers.size(); ++d) {
    const Times& t = times[d];
    ok &= Row("cudaLaunchKernel", drivers[d], t.launch[0], t.launch[1], kLaunchBudgetNs, o.budgets);
    ok &= Row("cudaMalloc+cudaFree", drivers[d], t.pair[0], t.pair[1], kPairBudgetNs, o.budgets);
  }
  return ok ? 0 : 1;
}

}  // namespace vgpu::bench
