// Test support: the arbiter's policy against a model of a GPU without MPS (kernels of all tenants
// run one at a time, in admission order), on a synthetic clock. Each tenant is one gate thread of
// one process that calls TryAdmit as a launch gate does. Deterministic: a tenant's host latencies
// come from its own seeded generator. Used by arbiter_policy_test.cc and arbiter_sync_test.cc.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "shm/arbiter_policy.h"

namespace vgpu::shm::testmodel {

inline constexpr uint64_t kMs = 1000 * 1000;
inline constexpr uint64_t kUs = 1000;
inline constexpr uint64_t kStep = 20 * kUs;  // how often sleeping tenants look at the clock
inline constexpr uint64_t kT0 = 1000 * kMs;  // the model's clock starts here

// What a tenant does. Without `depth`, `gap_ns` or `burst` it saturates: it launches whenever the
// arbiter admits.
struct TenantSpec {
  uint32_t max = 100;
  uint32_t guarantee = 0;
  uint32_t weight = 1;
  int32_t level = kPriorityNormal;
  uint32_t mode = kModeCapped;
  uint64_t kernel_ns = 1 * kMs;
  uint64_t gap_ns = 0;    // > 0: launch one kernel (or a burst), wait for it, think this long
  uint64_t start_ns = 0;  // joins at this time
  uint64_t stop_ns = 0;   // > 0: launches nothing from this time on
  uint64_t slice_ns = 5 * kMs;
  int depth = 0;  // > 0: at most this many kernels in flight (0: as many as the arbiter admits)
  // > 0: launch-then-synchronize: launches this many kernels back to back, waits until it sees
  // the last one end (cuStreamSynchronize), thinks gap_ns, and launches the next burst.
  int burst = 0;
  // Host time from a kernel's end until the tenant sees it (depth, gap and burst tenants): a fixed
  // part and a pseudo-random part in [0, jitter).
  uint64_t host_ns = 0;
  uint64_t host_jitter_ns = 0;
  // A gate woken (a generation change or its retry time) runs this much later, pseudo-random in
  // [0, wake_jitter): a loaded host's scheduling latency.
  uint64_t wake_jitter_ns = 0;
  // A loaded host: with this chance (per mille) each of the delays above gets an extra
  // pseudo-random part in [0, stall_ns) (the process waited for a CPU).
  uint32_t stall_permille = 0;
  uint64_t stall_ns = 0;
  uint32_t latency_slack_us = 0;
};

class Model {
 public:
  explicit Model(std::vector<TenantSpec> specs);
  ~Model();

  void Run(uint64_t until);

  // Share of the device (percent) tenant i got in [from, to).
  double Share(size_t i, uint64_t from, uint64_t to) const;
  // Of the waits of kernels that started at or after `from` (request-to-start for gap tenants,
  // call-to-start otherwise).
  uint64_t WaitPercentile(size_t i, double p, uint64_t from = 0) const;
  uint64_t Kernels(size_t i) const;
  const std::vector<std::pair<uint64_t, uint64_t>>& Busy(size_t i) const;
  Arbiter* arbiter() { return arbiter_.get(); }

 private:
  struct Tenant;
  uint64_t SeenAt(Tenant& t, uint64_t end);
  uint64_t Random(Tenant& t, uint64_t below);
  uint64_t Stall(Tenant& t);
  void Step(Tenant& t);

  std::unique_ptr<Arbiter> arbiter_;
  std::vector<Tenant> tenants_;
  uint64_t now_ = kT0;
  uint64_t device_free_ = 0;
  size_t rotation_ = 0;
};

}  // namespace vgpu::shm::testmodel
