// QuarantineActions: what the node can do to one tenant (a slice: one container's share of one
// or more GPUs) that hurts its neighbours. TenantLevels (tenant_levels.h) calls these when a
// tenant changes level; other deciders (a telemetry rules engine) may call them too.
//
// Contract for implementations:
// - every call is idempotent (Pause(true) twice is one pause) and returns an error rather than
//   throwing; an error is logged by the caller and retried at the next change or renewal;
// - nothing runs inside the tenant's processes except what libvgpu.so reads from its region:
//   a pause is a flag (with a lease, so that a pause outlives no node daemon) that the launch
//   hooks wait on; terminate is done by the node daemon (SIGKILL to the tenant's processes);
// - calls come from one thread at a time.
#pragma once

#include <string>

#include "common/status.h"

namespace vgpu::node::faults {

class QuarantineActions {
 public:
  virtual ~QuarantineActions() = default;
  // A metric and a Kubernetes Event; nothing changes for the tenant.
  virtual Status Warn(const std::string& slice, const std::string& reason) = 0;
  // Lowers the tenant's compute share to `share_pct` of each of its GPUs (1..100); 0 restores
  // the configured share.
  virtual Status LimitShare(const std::string& slice, int share_pct) = 0;
  // Holds (true) or releases (false) the tenant's kernel launches at libvgpu.so's gate. A pause
  // is renewed by calling again with true at least every lease period.
  virtual Status Pause(const std::string& slice, bool paused) = 0;
  // Ends the tenant's processes.
  virtual Status Terminate(const std::string& slice, const std::string& reason) = 0;
};

}  // namespace vgpu::node::faults
