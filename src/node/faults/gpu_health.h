// The health state machine of one GPU (or one MIG instance of it). Pure logic: no I/O, no
// threads, no clock reads; the caller feeds events, samples and results with the time, and
// carries out the actions the machine asks for (reset, probe, notify). Not thread-safe; the
// node's HealthTracker (node/health.h) serialises the calls.
//
//   Healthy ──counted XIDs >= suspect_events within suspect_window, a failed sample, or a kernel
//             running past the node's kernel deadline──► Suspect
//   Suspect ──suspect_quiet without a counted XID, a failed sample or a stuck kernel──► Healthy
//   Healthy/Suspect/Probation ──fatal XID (reset, reboot or unknown class), or lost_samples
//                               failed samples in a row──► Quarantined
//   Quarantined ──the fault needs a reset──► Reset pending (at once)
//   Quarantined ──the fault needs a reboot──► stays, until a recovery is reported
//   Reset pending ──no process holds the GPU──► asks for a reset (kReset); retried every
//                   reset_retry, at most reset_attempts times, then waits for a recovery report
//   Reset pending ──reset done, or a recovery reported──► Probation (asks for a probe, kProbe)
//   Probation ──probe passed, then probation_quiet without an application or fatal XID──► Healthy
//   Probation ──probe failed──► Quarantined (→ Reset pending; the next reset waits reset_retry
//               and counts towards reset_attempts)
//
// Hysteresis: ignore-class and unattributed application XIDs only count towards Suspect, and
// only as a rate (a periodic harmless XID below suspect_events per suspect_window never changes
// the state); Suspect keeps the GPU schedulable. A GPU quarantined again within relapse_window
// of its last recovery serves a doubled quiet period (x4, x8 at most) in its next probation.
//
// Schedulable (placements allowed, device plugin says Healthy): Healthy and Suspect.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "node/faults/xid_class.h"

namespace vgpu::node::faults {

enum class GpuState { kHealthy, kSuspect, kQuarantined, kResetPending, kProbation };
// "healthy", "suspect", "quarantined", "reset-pending", "probation".
const char* GpuStateName(GpuState s);

struct GpuHealthRules {
  int suspect_events = 5;
  int64_t suspect_window_s = 60;
  int64_t suspect_quiet_s = 300;
  int lost_samples = 2;
  int64_t reset_retry_s = 30;
  int reset_attempts = 3;
  int64_t probation_quiet_s = 120;
  int64_t relapse_window_s = 3600;
};

// Where a health event lands: a whole GPU (instance ids kNoInstance) or one MIG instance.
struct HealthKey {
  static constexpr uint32_t kNoInstance = 0xFFFFFFFFu;
  std::string uuid;
  uint32_t gpu_instance = kNoInstance;
  uint32_t compute_instance = kNoInstance;

  bool whole_gpu() const { return gpu_instance == kNoInstance; }
  // "GPU-...", or "GPU-.../gi1/ci0".
  std::string ToString() const;
  bool operator<(const HealthKey& o) const;
  bool operator==(const HealthKey& o) const;
};

enum class HealthActionKind {
  kReset,   // reset the GPU now (no process holds it); report with OnResetResult
  kProbe,   // run the allocation, kernel and copy probe; report with OnProbeResult
  kNotify,  // the state changed: log it and post a Kubernetes Event on the node
};

struct HealthAction {
  HealthActionKind kind = HealthActionKind::kNotify;
  HealthKey key;
  GpuState from = GpuState::kHealthy;
  GpuState to = GpuState::kHealthy;
  std::string message;
};

struct GpuHealthStatus {
  HealthKey key;
  GpuState state = GpuState::kHealthy;
  std::string reason;                // why it left Healthy; "" when healthy
  XidClass need = XidClass::kReset;  // while quarantined: what clears it (kReset or kReboot)
  int64_t since_ns = 0;              // when it entered its state
  int64_t transitions = 0;           // state changes
  int64_t quarantines = 0;           // times it entered Quarantined
  int relapses = 0;                  // quarantines within relapse_window of a recovery
  int reset_attempts = 0;
  bool probe_passed = false;   // in Probation
  int64_t quiet_since_ns = 0;  // Probation: start of the current quiet period
};

class GpuHealthMachine {
 public:
  GpuHealthMachine(HealthKey key, const GpuHealthRules* rules);

  // An XID with its effective class (EffectiveClass). Attributed application XIDs concern a
  // tenant (node/faults/tenant_levels.h), not the GPU: the caller does not pass them here.
  void OnXid(uint64_t xid, XidClass cls, int64_t now_ns, std::vector<HealthAction>* out);
  // A kernel has run past the node's deadline (`what` says whose, for how long): Healthy ->
  // Suspect; while it stays stuck the Suspect state's quiet period does not start.
  void OnStuckKernel(const std::string& what, int64_t now_ns, std::vector<HealthAction>* out);
  // A double-bit ECC error (handled as XID 48).
  void OnDoubleBitEcc(int64_t now_ns, std::vector<HealthAction>* out);
  // A sample: `ok` false when the GPU did not answer; `processes` holding it (-1 unknown).
  void OnSample(bool ok, int processes, const std::string& error, int64_t now_ns,
                std::vector<HealthAction>* out);
  // An operator (or the driver: recovery action back to none) reports the fault cleared.
  void OnRecovered(const std::string& why, int64_t now_ns, std::vector<HealthAction>* out);
  void OnResetResult(bool ok, const std::string& error, int64_t now_ns,
                     std::vector<HealthAction>* out);
  void OnProbeResult(bool ok, const std::string& error, int64_t now_ns,
                     std::vector<HealthAction>* out);
  // Timers: Suspect's and Probation's quiet periods, reset retries.
  void Tick(int64_t now_ns, std::vector<HealthAction>* out);

  const GpuHealthStatus& status() const { return status_; }
  bool Schedulable() const {
    return status_.state == GpuState::kHealthy || status_.state == GpuState::kSuspect;
  }

 private:
  void Enter(GpuState to, const std::string& reason, int64_t now_ns,
             std::vector<HealthAction>* out);
  void Quarantine(const std::string& reason, XidClass need, int64_t now_ns,
                  std::vector<HealthAction>* out, bool probe_failed = false);
  void Count(int64_t now_ns, const std::string& what, std::vector<HealthAction>* out);
  void MaybeReset(int64_t now_ns, std::vector<HealthAction>* out);
  int64_t ProbationQuietNs() const;

  const GpuHealthRules* rules_;
  GpuHealthStatus status_;
  std::deque<int64_t> counted_;  // times of counted events within suspect_window
  int64_t last_counted_ns_ = -1;
  int64_t last_recovery_ns_ = -1;
  int failed_samples_ = 0;
  int processes_ = -1;
  bool reset_in_flight_ = false;
  bool probe_in_flight_ = false;
  int64_t next_reset_ns_ = 0;
};

}  // namespace vgpu::node::faults
