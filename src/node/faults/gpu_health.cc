#include "node/faults/gpu_health.h"

#include <algorithm>
#include <tuple>

namespace vgpu::node::faults {
namespace {

constexpr int64_t kSec = 1'000'000'000LL;

}  // namespace

const char* GpuStateName(GpuState s) {
  switch (s) {
    case GpuState::kHealthy:
      return "healthy";
    case GpuState::kSuspect:
      return "suspect";
    case GpuState::kQuarantined:
      return "quarantined";
    case GpuState::kResetPending:
      return "reset-pending";
    case GpuState::kProbation:
      break;
  }
  return "probation";
}

std::string HealthKey::ToString() const {
  if (whole_gpu()) return uuid;
  std::string s = uuid + "/gi" + std::to_string(gpu_instance);
  if (compute_instance != kNoInstance) s += "/ci" + std::to_string(compute_instance);
  return s;
}

bool HealthKey::operator<(const HealthKey& o) const {
  return std::tie(uuid, gpu_instance, compute_instance) <
         std::tie(o.uuid, o.gpu_instance, o.compute_instance);
}

bool HealthKey::operator==(const HealthKey& o) const {
  return uuid == o.uuid && gpu_instance == o.gpu_instance && compute_instance == o.compute_instance;
}

GpuHealthMachine::GpuHealthMachine(HealthKey key, const GpuHealthRules* rules) : rules_(rules) {
  status_.key = std::move(key);
}

void GpuHealthMachine::Enter(GpuState to, const std::string& reason, int64_t now_ns,
                             std::vector<HealthAction>* out) {
  GpuState from = status_.state;
  if (from == to) return;
  status_.state = to;
  status_.since_ns = now_ns;
  ++status_.transitions;
  if (to == GpuState::kHealthy) {
    status_.reason.clear();
  } else if (!reason.empty()) {
    status_.reason = reason;
  }
  HealthAction a;
  a.kind = HealthActionKind::kNotify;
  a.key = status_.key;
  a.from = from;
  a.to = to;
  a.message = std::string(GpuStateName(from)) + " -> " + GpuStateName(to) +
              (reason.empty() ? "" : ": " + reason);
  out->push_back(std::move(a));
  if (to == GpuState::kProbation) {
    status_.probe_passed = false;
    status_.quiet_since_ns = now_ns;
    probe_in_flight_ = true;
    HealthAction p;
    p.kind = HealthActionKind::kProbe;
    p.key = status_.key;
    p.from = p.to = to;
    out->push_back(std::move(p));
  }
}

int64_t GpuHealthMachine::ProbationQuietNs() const {
  int shift = std::min(status_.relapses, 3);
  return (rules_->probation_quiet_s * kSec) << shift;
}

void GpuHealthMachine::Quarantine(const std::string& reason, XidClass need, int64_t now_ns,
                                  std::vector<HealthAction>* out, bool probe_failed) {
  GpuState s = status_.state;
  if (s == GpuState::kQuarantined || s == GpuState::kResetPending) {
    // Already out of service: a reboot need wins over a reset need.
    if (need == XidClass::kReboot && status_.need != XidClass::kReboot) {
      status_.need = XidClass::kReboot;
      status_.reason = reason;
      Enter(GpuState::kQuarantined, reason, now_ns, out);
    }
    return;
  }
  const bool relapse =
      s == GpuState::kProbation ||
      (last_recovery_ns_ >= 0 && now_ns - last_recovery_ns_ < rules_->relapse_window_s * kSec);
  status_.relapses = relapse ? status_.relapses + 1 : 0;
  status_.need = need == XidClass::kReboot ? XidClass::kReboot : XidClass::kReset;
  // After a failed probe the reset did not help: the next one waits reset_retry and counts
  // towards reset_attempts (then the GPU waits for a recovery report), not a new series.
  if (!probe_failed) status_.reset_attempts = 0;
  reset_in_flight_ = false;
  probe_in_flight_ = false;
  next_reset_ns_ = probe_failed ? now_ns + rules_->reset_retry_s * kSec : now_ns;
  ++status_.quarantines;
  Enter(GpuState::kQuarantined, reason, now_ns, out);
  if (status_.need == XidClass::kReset) {
    Enter(GpuState::kResetPending, reason, now_ns, out);
    MaybeReset(now_ns, out);
  }
}

void GpuHealthMachine::Count(int64_t now_ns, const std::string& what,
                             std::vector<HealthAction>* out) {
  last_counted_ns_ = now_ns;
  counted_.push_back(now_ns);
  const int64_t window = rules_->suspect_window_s * kSec;
  while (!counted_.empty() && counted_.front() <= now_ns - window) counted_.pop_front();
  if (status_.state == GpuState::kHealthy &&
      static_cast<int>(counted_.size()) >= rules_->suspect_events) {
    Enter(GpuState::kSuspect,
          std::to_string(counted_.size()) + " events within " +
              std::to_string(rules_->suspect_window_s) + " s (last: " + what + ")",
          now_ns, out);
  }
}

void GpuHealthMachine::OnXid(uint64_t xid, XidClass cls, int64_t now_ns,
                             std::vector<HealthAction>* out) {
  const std::string what = "XID " + std::to_string(xid);
  if (IsFatal(cls)) {
    Quarantine(what + " (" + std::string(XidClassName(cls)) + ")", cls, now_ns, out);
    return;
  }
  if (cls == XidClass::kRecovery) return;  // its action arrives as a recovery-action event
  if (status_.state == GpuState::kProbation && cls == XidClass::kApplication) {
    status_.quiet_since_ns = now_ns;  // the quiet period starts over
  }
  Count(now_ns, what, out);
}

void GpuHealthMachine::OnStuckKernel(const std::string& what, int64_t now_ns,
                                     std::vector<HealthAction>* out) {
  if (status_.state != GpuState::kHealthy && status_.state != GpuState::kSuspect) return;
  last_counted_ns_ = now_ns;
  Enter(GpuState::kSuspect, what, now_ns, out);
}

void GpuHealthMachine::OnDoubleBitEcc(int64_t now_ns, std::vector<HealthAction>* out) {
  Quarantine("double-bit ECC error", XidClass::kReset, now_ns, out);
}

void GpuHealthMachine::OnSample(bool ok, int processes, const std::string& error, int64_t now_ns,
                                std::vector<HealthAction>* out) {
  if (ok) {
    failed_samples_ = 0;
    processes_ = processes;
    if (status_.state == GpuState::kResetPending) MaybeReset(now_ns, out);
    return;
  }
  ++failed_samples_;
  processes_ = -1;
  const std::string what = "does not answer: " + error;
  GpuState s = status_.state;
  if (s == GpuState::kQuarantined || s == GpuState::kResetPending) return;
  if (failed_samples_ >= rules_->lost_samples || s == GpuState::kSuspect ||
      s == GpuState::kProbation) {
    Quarantine(what, XidClass::kReset, now_ns, out);
    return;
  }
  last_counted_ns_ = now_ns;
  Enter(GpuState::kSuspect, what, now_ns, out);
}

void GpuHealthMachine::OnRecovered(const std::string& why, int64_t now_ns,
                                   std::vector<HealthAction>* out) {
  switch (status_.state) {
    case GpuState::kHealthy:
    case GpuState::kProbation:
      return;
    case GpuState::kSuspect:
      counted_.clear();
      Enter(GpuState::kHealthy, why, now_ns, out);
      return;
    case GpuState::kQuarantined:
    case GpuState::kResetPending:
      reset_in_flight_ = false;
      failed_samples_ = 0;
      Enter(GpuState::kProbation, why, now_ns, out);
      return;
  }
}

void GpuHealthMachine::MaybeReset(int64_t now_ns, std::vector<HealthAction>* out) {
  if (reset_in_flight_ || status_.reset_attempts >= rules_->reset_attempts) return;
  if (processes_ > 0 || now_ns < next_reset_ns_) return;
  reset_in_flight_ = true;
  ++status_.reset_attempts;
  HealthAction a;
  a.kind = HealthActionKind::kReset;
  a.key = status_.key;
  a.from = a.to = status_.state;
  out->push_back(std::move(a));
}

void GpuHealthMachine::OnResetResult(bool ok, const std::string& error, int64_t now_ns,
                                     std::vector<HealthAction>* out) {
  if (status_.state != GpuState::kResetPending || !reset_in_flight_) return;
  reset_in_flight_ = false;
  if (ok) {
    failed_samples_ = 0;
    Enter(GpuState::kProbation, "reset done", now_ns, out);
    return;
  }
  next_reset_ns_ = now_ns + rules_->reset_retry_s * kSec;
  status_.reason = "reset failed (" + std::to_string(status_.reset_attempts) + " of " +
                   std::to_string(rules_->reset_attempts) + "): " + error;
  if (status_.reset_attempts >= rules_->reset_attempts) {
    status_.reason += "; waiting for a recovery report";
  }
}

void GpuHealthMachine::OnProbeResult(bool ok, const std::string& error, int64_t now_ns,
                                     std::vector<HealthAction>* out) {
  if (status_.state != GpuState::kProbation || !probe_in_flight_) return;
  probe_in_flight_ = false;
  if (!ok) {
    Quarantine("probe failed: " + error, XidClass::kReset, now_ns, out, /*probe_failed=*/true);
    if (status_.reset_attempts >= rules_->reset_attempts) {
      status_.reason += " (after " + std::to_string(status_.reset_attempts) +
                        " resets); waiting for a recovery report";
    }
    return;
  }
  status_.probe_passed = true;
  status_.quiet_since_ns = now_ns;
}

void GpuHealthMachine::Tick(int64_t now_ns, std::vector<HealthAction>* out) {
  switch (status_.state) {
    case GpuState::kHealthy:
    case GpuState::kQuarantined:
      return;
    case GpuState::kSuspect:
      if (failed_samples_ == 0 && now_ns - last_counted_ns_ >= rules_->suspect_quiet_s * kSec) {
        counted_.clear();
        Enter(GpuState::kHealthy, "quiet for " + std::to_string(rules_->suspect_quiet_s) + " s",
              now_ns, out);
      }
      return;
    case GpuState::kResetPending:
      MaybeReset(now_ns, out);
      return;
    case GpuState::kProbation:
      if (status_.probe_passed && now_ns - status_.quiet_since_ns >= ProbationQuietNs()) {
        last_recovery_ns_ = now_ns;
        counted_.clear();
        Enter(GpuState::kHealthy,
              "probe passed and quiet for " + std::to_string(ProbationQuietNs() / kSec) + " s",
              now_ns, out);
      }
      return;
  }
}

}  // namespace vgpu::node::faults
