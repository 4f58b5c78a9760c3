// `vgpu bench copy`: tenants that copy between host and device as fast as they may, each a
// process in its own slice with its own copy caps; reports per tenant and direction the target
// (its cap) and the achieved rate over the run and over every window (copy.cc runs them,
// copy_report.cc parses tenants and prints the report, copy_tenant.cc is the tenant; src/cli's
// cmd_bench_copy.cc reads the flags).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::bench {

struct CopyTenant {
  std::string name;
  uint64_t cap[2] = {0, 0};  // bytes/s per direction (0 h2d, 1 d2h); 0: none
  bool copies[2] = {false, false};
  bool borrow = false;
  uint64_t size = 1ULL << 20;  // bytes per copy call
  uint64_t start_ns = 0;       // offset from the common start
  uint64_t stop_ns = 0;        // 0: the end of the run
};

inline constexpr const char* kCopyTenantKeys =
    "h2d (cap: 10GB/s, 512MiB/s or unlimited), d2h (the same), dir (h2d|d2h|both: what it "
    "copies; default the capped directions, else h2d), borrow (on|off), size (bytes per copy), "
    "start (delay), stop (time it stops)";

// Parses "name[:key=value,...]"; errors name the tenant and the key.
Result<CopyTenant> ParseCopyTenant(const std::string& text);

// One copy as a tenant recorded it: direction, completion time, bytes.
struct CopyRecord {
  int dir = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
};

struct CopyDirResult {
  bool active = false;
  std::optional<double> target;  // bytes/s
  double rate = 0;               // achieved over the shared phase, bytes/s
  std::vector<double> windows;   // achieved in each window of the shared phase
  double worst_window_pct = 0;   // largest |window / target - 1| x 100 (0 without a target)
  uint64_t bytes = 0;
};

struct CopyTenantResult {
  CopyDirResult dir[2];
};

struct CopyReport {
  bool sim = false;
  double seconds = 0;
  double window_s = 0;
  uint64_t link[2] = {0, 0};  // simulated link bandwidth per direction (0: not simulated)
  std::vector<CopyTenant> tenants;
  std::vector<CopyTenantResult> results;
};

// Rates of one tenant from its records over [from_ns, to_ns) in windows of window_ns.
CopyTenantResult AnalyzeCopies(const CopyTenant& t, const std::vector<CopyRecord>& records,
                               uint64_t from_ns, uint64_t to_ns, uint64_t window_ns);

std::string CopyReportText(const CopyReport& report);
std::string CopyReportJson(const CopyReport& report);

// A run of `vgpu bench copy` as its flags give it (checked there): 1 to 16 tenants with distinct
// names whose start and stop lie within `seconds`, and where the libraries are.
struct CopyRun {
  std::vector<CopyTenant> tenants;
  bool sim = false;           // on a simulated GPU of its own (a private state file)
  double seconds = 5;         // length of the run
  double window_s = 1;        // window of the per-window rates
  uint64_t link[2] = {0, 0};  // with sim: the simulated host link per direction, bytes/s
  std::string libvgpu;        // libvgpu.so, preloaded into every tenant
  std::string simgpu_dir;     // the simulated GPU's libraries (with sim)
};

// Runs the tenants together, each a process in its own slice with its copy caps and this run's
// own host-link file: this executable as `bench copy-tenant ...` (RunCopyTenant), with its work
// files in a directory under /tmp that is removed at the end. Returns the report, results in
// tenant order, or what failed (a tenant that did not start or finish: kInternal).
Result<CopyReport> RunCopy(const CopyRun& run);

// The tenant program (copy_tenant.cc): copies `size` bytes at a time in direction `dir`
// (h2d, d2h or both) from the start time read on stdin + offset_ns until start + stop_ns.
struct CopyTenantOptions {
  std::string dir = "h2d";
  uint64_t size = 1 << 20;
  uint64_t offset_ns = 0;
  uint64_t stop_ns = 0;
  std::string out;  // where to write "dir end_ns bytes" per copy
};
// Returns the process's exit status: 0 when it ran, 1 when the driver failed it (the reason on
// stderr).
int RunCopyTenant(const CopyTenantOptions& options);

}  // namespace vgpu::bench
