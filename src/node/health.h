// Health of the node's GPUs: the per-GPU state machines (node/faults/gpu_health.h) fed with the
// driver's events, classified by NVIDIA's XID catalog (node/faults/xid_class.h) and overridden
// by the driver's recovery action, and with the sampler's results. It decides what kubelet is
// told (Healthy(): the GPU is Healthy or Suspect) and collects the actions the daemon carries
// out (reset, probe, notify).
//
// Routing of an event:
//   - an XID attributed to a process (pid set) of class application or ignore concerns that
//     process's tenant only (node/faults/tenant_levels.h): counted here, never fed to the GPU;
//   - an XID with MIG instance ids goes to that instance's machine (created on first use); a
//     fatal one takes only that instance out of service; an application or ignore class one the
//     daemon attributed to the instance's only tenant is that tenant's, as with a pid;
//   - an XID without a GPU (the event set failed) goes to every GPU as a failed sample;
//   - a recovery-action event (XID 154's payload) is remembered per GPU and overrides the class
//     of the XIDs that follow; a change back to "none" reports the GPU recovered (an operator
//     reset it);
//   - kRecovered (an operator, or an injection on the simulated GPU) reports it recovered.
// `ignored_xids` (operator) are treated as class ignore and `sticky_xids` as class reboot (out
// of service until a recovery is reported), whatever the catalog says.
//
// Times are nanoseconds of a monotonic clock supplied by the caller. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "device/device_backend.h"
#include "node/faults/gpu_health.h"

namespace vgpu::node {

struct HealthRules {
  faults::GpuHealthRules gpu;
  // A kernel running longer than this (where the backend reports running kernels: the simulated
  // GPU) makes its GPU Suspect and is a signal for its tenant. 0: off.
  int64_t kernel_deadline_ms = 60'000;
  std::set<uint64_t> ignored_xids;
  std::set<uint64_t> sticky_xids;
};

struct GpuHealth {
  std::string uuid;
  std::string instance;  // "" for the whole GPU, "gi1/ci0" for a MIG instance
  bool healthy = true;   // schedulable: Healthy or Suspect
  faults::GpuState state = faults::GpuState::kHealthy;
  std::string reason;                 // why it left Healthy (empty when healthy)
  int64_t unhealthy_transitions = 0;  // times it went out of service
  int relapses = 0;
  // Events seen, by "<kind>:<code>" (e.g. "xid:79", "ecc-dbe:0").
  std::map<std::string, uint64_t> events;
  // The last XID reported on the GPU or any of its MIG instances, whatever its class and whoever
  // it was charged to; 0 when none was (set on the whole GPU's entry only).
  uint64_t last_xid = 0;
};

class HealthTracker {
 public:
  HealthTracker(std::vector<std::string> uuids, HealthRules rules);

  // Each returns true when the schedulable state of some GPU or instance changed.
  // `attributed`: the daemon charged the XID to a tenant without a pid (the only tenant of its
  // MIG instance); like one with a pid, an application or ignore class XID then concerns the
  // tenant only.
  bool OnEvent(const device::HealthEvent& event, int64_t now_ns, bool attributed = false);
  // `processes`: how many processes hold the GPU (-1 unknown).
  bool OnSample(const std::string& uuid, bool ok, const std::string& error, int64_t now_ns,
                int processes = -1);
  bool Tick(int64_t now_ns);
  // A kernel on `uuid` has run past kernel_deadline_ms (`what`: whose, how long); called every
  // sampling round while it runs, `first` the first time for this kernel (counted as an event).
  bool OnStuckKernel(const std::string& uuid, const std::string& what, bool first, int64_t now_ns);
  bool OnResetResult(const faults::HealthKey& key, bool ok, const std::string& error,
                     int64_t now_ns);
  bool OnProbeResult(const faults::HealthKey& key, bool ok, const std::string& error,
                     int64_t now_ns);
  // The actions asked for since the last call, in order.
  std::vector<faults::HealthAction> TakeActions();

  bool Healthy(const std::string& uuid) const;
  // Whole GPUs first (in discovery order), then MIG instances.
  std::vector<GpuHealth> Snapshot() const;
  const HealthRules& rules() const { return rules_; }

  // The class an XID has on `uuid` now (catalog, operator lists, the driver's action).
  faults::XidClass ClassOf(const std::string& uuid, uint64_t xid) const;

 private:
  struct Entry {
    faults::GpuHealthMachine machine;
    std::map<std::string, uint64_t> events;
    uint64_t last_xid = 0;
  };
  Entry* FindLocked(const faults::HealthKey& key, bool create);
  faults::XidClass ClassLocked(const std::string& uuid, uint64_t xid) const;
  bool Changed(const std::map<faults::HealthKey, bool>& before) const;
  std::map<faults::HealthKey, bool> SchedulableLocked() const;

  HealthRules rules_;
  mutable std::mutex mu_;
  std::vector<std::string> uuids_;
  std::map<faults::HealthKey, Entry> entries_;
  std::map<std::string, faults::RecoveryAction> driver_action_;  // by GPU
  std::vector<faults::HealthAction> actions_;
};

// Parses a comma-separated list of XID numbers ("13,31,43"); "" is the empty set.
Result<std::set<uint64_t>> ParseXidList(const std::string& text);

}  // namespace vgpu::node
