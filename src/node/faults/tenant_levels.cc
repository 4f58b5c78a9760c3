#include "node/faults/tenant_levels.h"

#include <algorithm>

#include "common/field_list.h"
#include "common/units.h"

namespace vgpu::node::faults {
namespace {

constexpr int64_t kSec = 1'000'000'000LL;

Status Range(const char* field, int64_t value, int64_t lo, int64_t hi, const char* unit = "") {
  if (value >= lo && value <= hi) return Status::Ok();
  return Status::InvalidArgument(std::string(field) + ": " + std::to_string(value) + unit +
                                 " is out of range " + std::to_string(lo) + ".." +
                                 std::to_string(hi) + unit);
}

}  // namespace

const char* TenantLevelName(TenantLevel l) {
  switch (l) {
    case TenantLevel::kNormal:
      return "normal";
    case TenantLevel::kWarn:
      return "warn";
    case TenantLevel::kLimit:
      return "limit";
    case TenantLevel::kPause:
      return "pause";
    case TenantLevel::kTerminate:
      break;
  }
  return "terminate";
}

const char* TenantSignalName(TenantSignal s) {
  switch (s) {
    case TenantSignal::kXid:
      return "xid";
    case TenantSignal::kLaunchFailure:
      return "launch-failure";
    case TenantSignal::kOomStorm:
      return "oom-storm";
    case TenantSignal::kMemoryRamp:
      return "memory-ramp";
    case TenantSignal::kStuckKernel:
      return "stuck-kernel";
    case TenantSignal::kThrash:
      break;
  }
  return "thrash";
}

Status ValidateTenantLevelRules(const TenantLevelRules& r) {
  VGPU_RETURN_IF_ERROR(Range("warn", r.warn, 1, 1000));
  VGPU_RETURN_IF_ERROR(Range("limit", r.limit, r.warn + 1, 1000));
  VGPU_RETURN_IF_ERROR(Range("pause", r.pause, r.limit + 1, 1000));
  VGPU_RETURN_IF_ERROR(Range("terminate", r.terminate, r.pause + 1, 1000));
  VGPU_RETURN_IF_ERROR(Range("quiet", r.quiet_s, 1, 7 * 24 * 3600, " s"));
  VGPU_RETURN_IF_ERROR(Range("limit-share", r.limit_share_pct, 1, 99, " %"));
  VGPU_RETURN_IF_ERROR(Range("xid-weight", r.xid_weight, 0, 100));
  VGPU_RETURN_IF_ERROR(Range("launch-failure-weight", r.launch_failure_weight, 0, 100));
  VGPU_RETURN_IF_ERROR(Range("oom-storm-weight", r.oom_storm_weight, 0, 100));
  VGPU_RETURN_IF_ERROR(Range("memory-ramp-weight", r.memory_ramp_weight, 0, 100));
  VGPU_RETURN_IF_ERROR(Range("stuck-kernel-weight", r.stuck_kernel_weight, 0, 100));
  VGPU_RETURN_IF_ERROR(Range("thrash-weight", r.thrash_weight, 0, 100));
  VGPU_RETURN_IF_ERROR(Range("oom-storm", r.oom_storm, 1, 1'000'000));
  VGPU_RETURN_IF_ERROR(Range("oom-window", r.oom_window_s, 1, 3600, " s"));
  VGPU_RETURN_IF_ERROR(Range("ramp-pct", r.ramp_pct, 51, 100, " %"));
  VGPU_RETURN_IF_ERROR(Range("ramp-window", r.ramp_window_s, 1, 3600, " s"));
  return Status::Ok();
}

Result<TenantLevelRules> ParseTenantLevelRules(const std::string& text) {
  TenantLevelRules r;
  for (const FieldItem& item : SplitFieldList(text)) {
    if (!item.has_value) {
      return Status::InvalidArgument("\"" + item.field + "\": expected field=value");
    }
    const std::string& field = item.field;
    const std::string& value = item.value;
    int* int_field = nullptr;
    int64_t* seconds_field = nullptr;
    if (field == "warn") int_field = &r.warn;
    if (field == "limit") int_field = &r.limit;
    if (field == "pause") int_field = &r.pause;
    if (field == "terminate") int_field = &r.terminate;
    if (field == "limit-share") int_field = &r.limit_share_pct;
    if (field == "xid-weight") int_field = &r.xid_weight;
    if (field == "launch-failure-weight") int_field = &r.launch_failure_weight;
    if (field == "oom-storm-weight") int_field = &r.oom_storm_weight;
    if (field == "memory-ramp-weight") int_field = &r.memory_ramp_weight;
    if (field == "stuck-kernel-weight") int_field = &r.stuck_kernel_weight;
    if (field == "thrash-weight") int_field = &r.thrash_weight;
    if (field == "oom-storm") int_field = &r.oom_storm;
    if (field == "ramp-pct") int_field = &r.ramp_pct;
    if (field == "quiet") seconds_field = &r.quiet_s;
    if (field == "oom-window") seconds_field = &r.oom_window_s;
    if (field == "ramp-window") seconds_field = &r.ramp_window_s;
    if (int_field != nullptr) {
      auto n = ParseUnsigned(value, field);
      if (!n) return n.error();
      if (*n > 10'000'000) return Status::InvalidArgument(field + ": " + value + " is too large");
      *int_field = static_cast<int>(*n);
    } else if (seconds_field != nullptr) {
      auto ns = ParseDuration(value, field);
      if (!ns) return ns.error();
      *seconds_field = *ns / kSec;
    } else {
      return Status::InvalidArgument(
          "\"" + field +
          "\" is not a field (warn, limit, pause, terminate, quiet, limit-share, xid-weight, "
          "launch-failure-weight, oom-storm-weight, memory-ramp-weight, stuck-kernel-weight, "
          "thrash-weight, oom-storm, oom-window, ramp-pct, ramp-window)");
    }
  }
  VGPU_RETURN_IF_ERROR(ValidateTenantLevelRules(r));
  return r;
}

TenantLevels::TenantLevels(TenantLevelRules rules, QuarantineActions* actions)
    : rules_(rules), actions_(actions) {}

TenantLevels::Tenant& TenantLevels::Get(const std::string& slice) {
  Tenant& t = tenants_[slice];
  t.status.slice = slice;
  return t;
}

int TenantLevels::Threshold(TenantLevel l) const {
  switch (l) {
    case TenantLevel::kNormal:
      return 0;
    case TenantLevel::kWarn:
      return rules_.warn;
    case TenantLevel::kLimit:
      return rules_.limit;
    case TenantLevel::kPause:
      return rules_.pause;
    case TenantLevel::kTerminate:
      break;
  }
  return rules_.terminate;
}

TenantLevel TenantLevels::LevelFor(int strikes) const {
  if (strikes >= rules_.terminate) return TenantLevel::kTerminate;
  if (strikes >= rules_.pause) return TenantLevel::kPause;
  if (strikes >= rules_.limit) return TenantLevel::kLimit;
  if (strikes >= rules_.warn) return TenantLevel::kWarn;
  return TenantLevel::kNormal;
}

void TenantLevels::Move(Tenant& t, TenantLevel to, int64_t now_ns) {
  const TenantLevel from = t.status.level;
  if (from == to) return;
  t.status.level = to;
  t.status.level_since_ns = now_ns;
  const std::string& s = t.status.slice;
  if (actions_ == nullptr) return;
  if (to > from) {
    // Each level passed on the way up takes its action (a burst may skip levels).
    for (int l = static_cast<int>(from) + 1; l <= static_cast<int>(to); ++l) {
      switch (static_cast<TenantLevel>(l)) {
        case TenantLevel::kNormal:
          break;
        case TenantLevel::kWarn:
          (void)actions_->Warn(s, t.status.reason);
          break;
        case TenantLevel::kLimit:
          (void)actions_->LimitShare(s, rules_.limit_share_pct);
          break;
        case TenantLevel::kPause:
          (void)actions_->Pause(s, true);
          break;
        case TenantLevel::kTerminate:
          (void)actions_->Terminate(s, t.status.reason);
          break;
      }
    }
    return;
  }
  // Down: undo what the levels left behind had done.
  if (from >= TenantLevel::kPause && to < TenantLevel::kPause) (void)actions_->Pause(s, false);
  if (from >= TenantLevel::kLimit && to < TenantLevel::kLimit) (void)actions_->LimitShare(s, 0);
}

void TenantLevels::OnSignal(const std::string& slice, TenantSignal signal, int count,
                            const std::string& what, int64_t now_ns) {
  if (count <= 0) return;
  int weight = 0;
  switch (signal) {
    case TenantSignal::kXid:
      weight = rules_.xid_weight;
      break;
    case TenantSignal::kLaunchFailure:
      weight = rules_.launch_failure_weight;
      break;
    case TenantSignal::kOomStorm:
      weight = rules_.oom_storm_weight;
      break;
    case TenantSignal::kMemoryRamp:
      weight = rules_.memory_ramp_weight;
      break;
    case TenantSignal::kStuckKernel:
      weight = rules_.stuck_kernel_weight;
      break;
    case TenantSignal::kThrash:
      weight = rules_.thrash_weight;
      break;
  }
  Tenant& t = Get(slice);
  t.status.signals[TenantSignalName(signal)] += static_cast<uint64_t>(count);
  if (weight == 0) return;
  const int64_t add = static_cast<int64_t>(weight) * count;
  t.status.strikes = static_cast<int>(std::min<int64_t>(t.status.strikes + add, 1'000'000));
  t.status.last_strike_ns = now_ns;
  t.status.reason = std::string(TenantSignalName(signal)) + (what.empty() ? "" : ": " + what);
  Move(t, std::max(t.status.level, LevelFor(t.status.strikes)), now_ns);
}

void TenantLevels::OnCounters(const std::string& slice, uint64_t launch_failures,
                              uint64_t oom_refusals, int64_t now_ns) {
  Tenant& t = Get(slice);
  if (!t.counters_seen) {
    // The first look sets the baseline: what happened before the daemon looked is not judged.
    t.counters_seen = true;
    t.launch_failures = launch_failures;
    t.oom_refusals = oom_refusals;
    t.oom_history.push_back({now_ns, oom_refusals});
    return;
  }
  if (launch_failures > t.launch_failures) {
    uint64_t n = launch_failures - t.launch_failures;
    t.launch_failures = launch_failures;
    OnSignal(slice, TenantSignal::kLaunchFailure, static_cast<int>(std::min<uint64_t>(n, 1000)),
             std::to_string(n) + " failed launches", now_ns);
  }
  Tenant& u = Get(slice);
  if (oom_refusals < u.oom_refusals) u.oom_history.clear();  // a new region
  u.oom_refusals = oom_refusals;
  u.oom_history.push_back({now_ns, oom_refusals});
  const int64_t window = rules_.oom_window_s * kSec;
  while (u.oom_history.size() > 1 && u.oom_history.front().first < now_ns - window) {
    u.oom_history.erase(u.oom_history.begin());
  }
  const uint64_t in_window = oom_refusals - u.oom_history.front().second;
  if (in_window >= static_cast<uint64_t>(rules_.oom_storm)) {
    u.oom_history.clear();
    u.oom_history.push_back({now_ns, oom_refusals});
    OnSignal(slice, TenantSignal::kOomStorm, 1,
             std::to_string(in_window) + " refused allocations within " +
                 std::to_string(rules_.oom_window_s) + " s",
             now_ns);
  }
}

void TenantLevels::OnMemory(const std::string& slice, uint64_t used, uint64_t limit,
                            int64_t now_ns) {
  if (limit == 0) return;
  Tenant& t = Get(slice);
  const double ratio = static_cast<double>(used) / static_cast<double>(limit);
  if (ratio < 0.5) {
    t.below_half_ns = now_ns;
    t.ramp_signalled = false;
    return;
  }
  if (t.ramp_signalled || t.below_half_ns < 0) return;
  if (ratio * 100.0 >= rules_.ramp_pct && now_ns - t.below_half_ns <= rules_.ramp_window_s * kSec) {
    t.ramp_signalled = true;
    OnSignal(slice, TenantSignal::kMemoryRamp, 1,
             "memory at " + std::to_string(static_cast<int>(ratio * 100)) + " % of its limit",
             now_ns);
  }
}

void TenantLevels::Tick(int64_t now_ns) {
  for (auto& [slice, t] : tenants_) {
    if (t.status.level != TenantLevel::kNormal && t.status.last_strike_ns >= 0 &&
        now_ns - std::max(t.status.last_strike_ns, t.status.level_since_ns) >=
            rules_.quiet_s * kSec) {
      TenantLevel down = static_cast<TenantLevel>(static_cast<int>(t.status.level) - 1);
      t.status.strikes = Threshold(down);
      Move(t, down, now_ns);
    }
    if (t.status.level >= TenantLevel::kPause && actions_ != nullptr) {
      (void)actions_->Pause(slice, true);  // renews the lease
    }
  }
}

void TenantLevels::Forget(const std::string& slice) { tenants_.erase(slice); }

std::vector<TenantStatus> TenantLevels::Snapshot() const {
  std::vector<TenantStatus> out;
  for (const auto& [slice, t] : tenants_) out.push_back(t.status);
  return out;
}

TenantLevel TenantLevels::LevelOf(const std::string& slice) const {
  auto it = tenants_.find(slice);
  return it == tenants_.end() ? TenantLevel::kNormal : it->second.status.level;
}

}  // namespace vgpu::node::faults
