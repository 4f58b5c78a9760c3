// `vgpu bench share`: the tenants, the run, their results and the report (share.cc runs them,
// share_report.cc parses the tenants and prints the report; src/cli's cmd_bench.cc reads the
// flags).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/share_stats.h"
#include "common/result.h"
#include "slice/spec.h"

namespace vgpu::bench {

struct ShareTenant {
  std::string name;
  slice::SliceFlags flags;
  slice::SliceSpec spec;
  uint64_t kernel_ns = 0;  // 0: the bench's --kernel
  uint64_t gap_ns = 0;
  uint64_t start_ns = 0;  // offset from the common start
  uint64_t stop_ns = 0;   // offset from the common start at which it stops; 0: the end
  std::string launch = "kernel";
  int depth = 0;  // 0: enough for 10 ms of kernels
  // > 0: launch-then-synchronize: launches this many kernels, then cuStreamSynchronize, then
  // gap_ns of host time, and again (an inference loop).
  int sync = 0;
};

// The tenant keys ParseShareTenant accepts, as `vgpu bench share --help` and its errors list them.
inline constexpr const char* kShareTenantKeys =
    "max (or cores), guarantee, weight, priority, elastic (or elastic=true|false), mode "
    "(capped|elastic), time_slice, latency_slack, kernel (duration), gap (host time between "
    "kernels: a latency tenant), start (delay), stop (time it stops launching), launch "
    "(kernel|ptsz|ex|coop|graph), depth (kernels in flight), sync (kernels per "
    "cuStreamSynchronize: launch-then-sync; gap is then the host time after each sync)";

// Parses "name[:key=value,key=value,...]"; errors name the tenant and the key.
Result<ShareTenant> ParseShareTenant(const std::string& text);

struct ShareTenantResult {
  std::vector<KernelRecord> records;
  std::optional<double> target;          // expected share with all tenants running
  std::optional<double> demand;          // a sync tenant with host time: the most it can use
  double share = 0;                      // achieved share once all tenants run (from events)
  std::optional<double> share_timeline;  // the same from the simulated GPU's timeline
  std::vector<double> per_second;        // share in each second of the run (from the common start)
  std::vector<double> windows;           // share in each `window_s` window of the shared phase
  double worst_window_pp = 0;            // largest |window - target|
  int converge_s = -1;                   // seconds after the last start until within +-3 pp
  uint64_t wait_p50_ns = 0, wait_p99_ns = 0, wait_max_ns = 0;
  double throughput = 0;  // kernels per second while it ran
  std::optional<double> alone_throughput;
  std::optional<uint64_t> alone_wait_p99_ns;
  // A tenant that stops before the end: time from the end of its last kernel to the start of the
  // next kernel of any other tenant (the GPU's idle time at the hand-over).
  std::optional<uint64_t> idle_after_stop_ns;
};

struct ShareReport {
  bool sim = false;
  double seconds = 0;
  double window_s = 0;
  uint64_t kernel_ns = 0;
  uint64_t time_slice_ns = 0;
  std::vector<ShareTenant> tenants;
  std::vector<ShareTenantResult> results;
};

std::string ShareReportText(const ShareReport& report);
std::string ShareReportJson(const ShareReport& report);

// A run of `vgpu bench share` as its flags give it (checked there): the tenants (ParseShareTenant,
// each with its kernel_ns set), the settings and where the libraries are.
struct ShareRun {
  std::vector<ShareTenant> tenants;
  bool sim = false;            // on the simulated GPU (a private one with its own registry)
  double seconds = 10;         // length of the run
  double window_s = 10;        // window of the worst deviation (at most the shared phase)
  uint64_t kernel_ns = 0;      // the run's kernel duration (reported)
  uint64_t time_slice_ns = 0;  // reported
  bool baseline = false;       // first run each tenant alone for baseline_seconds
  double baseline_seconds = 3;
  std::string module;          // a compiled sim_sleep_ns kernel ("": the built-in one)
  uint64_t cycles_per_us = 0;  // calibration of the module's clock64 kernel
  std::string state_dir;       // registry and arbiters ("": private with sim, else the machine's)
  std::string libvgpu;         // libvgpu.so, preloaded into every tenant
  std::string simgpu_dir;      // the simulated GPU's libraries (with sim)
};

// Runs the tenants together (with `baseline`, first each alone), each a process in its own slice:
// this executable as `bench tenant ...` (RunShareTenant), with its work files in a directory
// under /tmp that is removed at the end. Sets VGPU_STATE_DIR to state_dir (with sim and none, to
// a private one) and with sim VGPU_SIMGPU_STATE in this process's environment, which the tenants
// inherit. Returns the report, results in tenant order, or what failed (a tenant that did not
// start or finish: kInternal).
Result<ShareReport> RunShare(const ShareRun& run);

// Writes one "call_ns start_ns end_ns" line per kernel to `path`; false when it cannot.
bool WriteKernelRecords(const std::string& path, const std::vector<KernelRecord>& records);

}  // namespace vgpu::bench
