// Per-tenant quarantine levels from signals attributed to one tenant (slice). Pure logic with
// an injected clock; the actions go through QuarantineActions. Not thread-safe (the daemon
// calls it from one thread).
//
// Signals (each is one strike, times its weight):
//   kXid            an application-class XID whose process (or MIG instance) is the tenant's
//   kLaunchFailure  kernel launches that failed (libvgpu.so counts them in the region)
//   kOomStorm       `oom_storm` refused allocations within oom_window (region counter)
//   kMemoryRamp     the tenant's memory went from below half of its limit to ramp_pct of it
//                   within ramp_window
//   kStuckKernel    a kernel of the tenant's ran past the node's kernel deadline (once per
//                   kernel)
//   kThrash         the tenant spills (memory mode spill, priority below high) while its GPU's
//                   host link is busy past the thrash threshold (node/rules/spill_thrash.h); never
//                   sent for a high-priority tenant
// Strikes add up; the level is the highest whose threshold the strikes reach:
//   normal < warn (metric, event) < limit (compute share lowered to limit_share_pct)
//          < pause (launches held at the gate) < terminate (processes ended)
// Each level's action is taken when it is entered (Warn, LimitShare, Pause, Terminate); a
// paused tenant's pause is renewed at every Tick.
// Way back: after `quiet` without a strike the tenant steps down one level (its strikes become
// that level's threshold), undoing the action of the level it left; another quiet period, one
// more level.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "node/faults/quarantine_actions.h"

namespace vgpu::node::faults {

enum class TenantLevel { kNormal = 0, kWarn = 1, kLimit = 2, kPause = 3, kTerminate = 4 };
const char* TenantLevelName(TenantLevel l);  // "normal", "warn", "limit", "pause", "terminate"

enum class TenantSignal { kXid, kLaunchFailure, kOomStorm, kMemoryRamp, kStuckKernel, kThrash };
const char* TenantSignalName(TenantSignal s);  // "xid", "launch-failure", "oom-storm", ...

struct TenantLevelRules {
  // Strikes at which each level is reached (strictly increasing, 1..1000).
  int warn = 1;
  int limit = 3;
  int pause = 6;
  int terminate = 10;
  int64_t quiet_s = 300;     // 1 s .. 7 days
  int limit_share_pct = 25;  // 1..99
  // Weights per signal (0..100; 0 ignores the signal).
  int xid_weight = 2;
  int launch_failure_weight = 1;
  int oom_storm_weight = 1;
  int memory_ramp_weight = 1;
  int stuck_kernel_weight = 2;
  int thrash_weight = 1;
  // An OOM storm: this many refused allocations (1..1e6) within oom_window_s (1..3600).
  int oom_storm = 20;
  int64_t oom_window_s = 10;
  // A memory ramp: from below 50 % to ramp_pct (51..100) of the limit within ramp_window_s.
  int ramp_pct = 95;
  int64_t ramp_window_s = 60;
};

// Parses "warn=1,limit=3,pause=6,terminate=10,quiet=5m,limit-share=25,xid-weight=2,...";
// fields not given keep their defaults. Errors name the field and the allowed range.
Result<TenantLevelRules> ParseTenantLevelRules(const std::string& text);
// Checks ranges and order; the error names the field.
Status ValidateTenantLevelRules(const TenantLevelRules& rules);

struct TenantStatus {
  std::string slice;
  TenantLevel level = TenantLevel::kNormal;
  int strikes = 0;
  int64_t last_strike_ns = -1;
  int64_t level_since_ns = 0;
  std::string reason;                       // the last signal that raised it
  std::map<std::string, uint64_t> signals;  // by TenantSignalName
};

class TenantLevels {
 public:
  TenantLevels(TenantLevelRules rules, QuarantineActions* actions);

  // `count` signals of one kind for `slice` (e.g. 3 failed launches since the last look).
  void OnSignal(const std::string& slice, TenantSignal signal, int count, const std::string& what,
                int64_t now_ns);
  // Counters read from the tenant's region (cumulative): turned into signals.
  void OnCounters(const std::string& slice, uint64_t launch_failures, uint64_t oom_refusals,
                  int64_t now_ns);
  // The tenant's memory in use and its limit (0: none): a ramp is a signal.
  void OnMemory(const std::string& slice, uint64_t used, uint64_t limit, int64_t now_ns);
  // Quiet periods; renews pauses.
  void Tick(int64_t now_ns);
  // The tenant is gone (its slice removed): forgotten, nothing undone.
  void Forget(const std::string& slice);

  std::vector<TenantStatus> Snapshot() const;
  TenantLevel LevelOf(const std::string& slice) const;
  const TenantLevelRules& rules() const { return rules_; }

 private:
  struct Tenant {
    TenantStatus status;
    uint64_t launch_failures = 0;
    uint64_t oom_refusals = 0;
    bool counters_seen = false;
    std::vector<std::pair<int64_t, uint64_t>> oom_history;  // (time, refusals so far)
    int64_t below_half_ns = -1;  // last time memory was below half its limit
    bool ramp_signalled = false;
  };
  Tenant& Get(const std::string& slice);
  int Threshold(TenantLevel l) const;
  TenantLevel LevelFor(int strikes) const;
  void Move(Tenant& t, TenantLevel to, int64_t now_ns);

  TenantLevelRules rules_;
  QuarantineActions* actions_;
  std::map<std::string, Tenant> tenants_;
};

}  // namespace vgpu::node::faults
