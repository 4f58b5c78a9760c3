// Health rules of the node daemon: when a GPU is advertised Unhealthy to kubelet, and when it
// becomes Healthy again (HAMi and NVIDIA's plugin never recover a GPU without a restart).
//
// A GPU becomes unhealthy when
//   - the driver reports a critical event on it: an XID not in `ignored_xids` (by default the
//     XIDs that an application causes: 13, 31, 43, 45, 68, 109), or a double-bit ECC error;
//   - it fails to answer a sample (NVML_ERROR_GPU_IS_LOST, ...);
//   - the event channel itself fails (an event without a GPU): every GPU, as the driver can no
//     longer tell us about faults.
// Single-bit (corrected) ECC errors and ignored XIDs are counted, nothing more.
// An unhealthy GPU becomes healthy again when
//   - no critical event and no failed sample happened for `recovery_seconds`, and at least one
//     sample succeeded after the last fault; except for
//   - `sticky_xids` (by default 48 and 95: uncorrectable memory errors that need a GPU reset),
//     which clear only through an explicit recovery event (kRecovered: an operator after a
//     reset, or an injection on the simulated GPU) or a restart of the daemon.
// An explicit recovery event clears any fault at once.
//
// Times are nanoseconds of a monotonic clock supplied by the caller, so tests drive the rules
// with a simulated clock. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "device/device_backend.h"

namespace vgpu::node {

struct HealthRules {
  std::set<uint64_t> ignored_xids = {13, 31, 43, 45, 68, 109};
  std::set<uint64_t> sticky_xids = {48, 95};
  int64_t recovery_seconds = 120;
};

struct GpuHealth {
  std::string uuid;
  bool healthy = true;
  bool sticky = false;  // waiting for an explicit recovery
  std::string reason;   // why it is unhealthy (empty when healthy)
  int64_t last_fault_ns = 0;
  int64_t last_ok_sample_ns = 0;
  int64_t unhealthy_transitions = 0;
  // Events seen, by "<kind>:<code>" (e.g. "xid:79", "ecc-dbe:0").
  std::map<std::string, uint64_t> events;
};

class HealthTracker {
 public:
  HealthTracker(std::vector<std::string> uuids, HealthRules rules);

  // Each returns true when the health of some GPU changed.
  bool OnEvent(const device::HealthEvent& event, int64_t now_ns);
  bool OnSample(const std::string& uuid, bool ok, const std::string& error, int64_t now_ns);
  bool Tick(int64_t now_ns);

  bool Healthy(const std::string& uuid) const;
  std::vector<GpuHealth> Snapshot() const;
  const HealthRules& rules() const { return rules_; }

 private:
  bool MarkUnhealthy(GpuHealth& g, const std::string& reason, bool sticky, int64_t now_ns);

  HealthRules rules_;
  mutable std::mutex mu_;
  std::vector<GpuHealth> gpus_;
};

// Parses a comma-separated list of XID numbers ("13,31,43"); "" is the empty set.
Result<std::set<uint64_t>> ParseXidList(const std::string& text);

}  // namespace vgpu::node
