// Statistics of `vgpu bench share`: the share a tenant is expected to get under the arbiter's
// policy (docs/compute.md), its achieved share over windows, waits and convergence. Pure
// functions of their inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace vgpu::bench {

struct TenantPolicy {
  int max = 100;      // percent
  int guarantee = 0;  // percent (capped: taken as max when max < 100)
  int weight = 1;
  int level = 2;  // shm::PriorityLevel
  bool elastic = false;
  bool saturating = true;  // false: a latency tenant with gaps (no expected share)
  // The most it can use alone, percent: a launch-then-sync tenant with host time between its
  // bursts uses at most burst time / (burst time + host time).
  double demand = 100;
};

// The expected share (percent) of each saturating tenant when all of them run together:
// guarantees first (scaled down if they exceed 100%), then, level by level from the most
// important, the rest by weight (weighted max-min fairness of the total, with the guarantees as
// floors and the maxima, or the demand when smaller, as ceilings). Non-saturating tenants get
// std::nullopt.
std::vector<std::optional<double>> ExpectedShares(const std::vector<TenantPolicy>& tenants);

// One kernel as a tenant saw it: when the launch was called, when the kernel ran.
struct KernelRecord {
  uint64_t call_ns = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// The most a launch-then-sync tenant (`sync` kernels per synchronization) could use alone,
// percent, from its own records (in launch order): its kernels' time over that time plus its host
// time between bursts (from the end of a burst's last kernel to the call of the next burst's
// first). Needs two bursts; std::nullopt otherwise.
std::optional<double> SyncDemand(const std::vector<KernelRecord>& records, int sync);

// Busy time of `records` within [from, to) as a percentage of the interval.
double BusyPercent(const std::vector<KernelRecord>& records, uint64_t from, uint64_t to);

// Percentages over consecutive windows [from + k*step, from + k*step + window) that fit before
// `to`.
std::vector<double> WindowPercents(const std::vector<KernelRecord>& records, uint64_t from,
                                   uint64_t to, uint64_t window, uint64_t step);

// The p-th quantile (0..1) of `values` (nearest rank); 0 when empty.
uint64_t Quantile(std::vector<uint64_t> values, double p);

// Seconds after which every value of `per_second` stays within `tolerance` of `target`; -1 if
// never.
int ConvergedAfter(const std::vector<double>& per_second, double target, double tolerance);

}  // namespace vgpu::bench
