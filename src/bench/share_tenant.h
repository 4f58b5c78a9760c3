// The tenant program of `vgpu bench share` (share_tenant.cc), run as `vgpu bench tenant`.
#pragma once

#include <cstdint>
#include <string>

namespace vgpu::bench {

struct ShareTenantOptions {
  uint64_t kernel_ns = 1000000;  // duration of each kernel
  uint64_t gap_ns = 0;           // > 0: one kernel at a time, this long between them
  uint64_t offset_ns = 0;        // start this long after the common start time
  uint64_t stop_ns = 0;          // stop launching this long after the common start time
  int depth = 8;                 // kernels in flight (saturating tenants)
  int sync = 0;  // > 0: launches this many kernels, cuStreamSynchronize, gap_ns, and again
  std::string launch = "kernel";  // kernel, ptsz, ex, coop, graph
  std::string module;             // a compiled sim_sleep_ns kernel instead of the built-in PTX
  uint64_t cycles_per_us = 0;     // for a module with a vgpu_cycles_per_us global
  std::string out;                // where to write "call_ns start_ns end_ns" lines
  bool start_now = false;         // start at once (no start time on stdin, no wait at the end)
  bool calibrate = false;         // print the cycles per us of --module's kernel and exit
};

// Runs the tenant (protocol in share_tenant.cc). Returns the process's exit status: 0 when it ran,
// 1 when the driver failed it (the reason on stderr).
int RunShareTenant(const ShareTenantOptions& options);

}  // namespace vgpu::bench
