// `vgpu bench oversub`: the slowdown of managed memory against working set on the simulated GPU's
// UVM model, and what a low-priority tenant spilling twice its share costs a high-priority one
// (oversub.cc); and the tenant program of the oversubscription scenario (oversub_tenant.cc).
// src/cli's cmd_bench_oversub.cc reads the flags of both.
#pragma once

#include <cstdint>
#include <string>

namespace vgpu::bench {

// The model's device and host link, as the flags give them (checked there).
struct OversubModel {
  uint64_t device_bytes = 16ULL << 30;
  uint64_t link_bytes_per_s = 55'000'000'000ULL;
  uint64_t fault_latency_ns = 20'000;
};

// Runs the model (deterministic: seeded) and returns the report, a table or one line of JSON.
std::string RunOversub(const OversubModel& model, bool json);

// The tenant program, run inside a `vgpu run` slice: allocates `bytes` in chunks of `chunk`, then
// from the CLOCK_REALTIME instant `start_at_ns` (0: at once) for `seconds` launches a touching
// kernel of `kernel_ns` per chunk, round after round, synchronizing every `depth` rounds, and
// prints "rounds=N device_bytes=D managed_bytes=M seconds=S rate=R".
struct OversubTenantOptions {
  uint64_t bytes = 0;
  uint64_t chunk = 64ULL << 20;
  uint64_t kernel_ns = 1'000'000;
  uint64_t start_at_ns = 0;
  uint64_t depth = 4;
  double seconds = 1;
};
// Returns the process's exit status: 0 when it ran, 1 when the driver failed it (the reason on
// stderr).
int RunOversubTenant(const OversubTenantOptions& options);

}  // namespace vgpu::bench
