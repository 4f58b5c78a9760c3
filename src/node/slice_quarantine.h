// SliceQuarantine: the node daemon's QuarantineActions (node/faults/quarantine_actions.h) on its
// slices, found by slice name in the SliceManager:
//   Warn        a log line and a Warning Event on the node ("TenantWarned")
//   LimitShare  the slice's max share in the arbiter of each of its GPUs (shm/arbiter_cap.h),
//               and share_cap_pct in its region (for display); 0 restores the shares it had.
//               A slice without compute arbitration (no compute settings: its launches are not
//               gated) cannot be limited: kFailedPrecondition
//   Pause       pause_until_ns in its region = now + lease (libvgpu.so holds launches until
//               then); false clears it
//   Terminate   SIGKILL to the host processes of the region's slots (found through /proc), and
//               an Event ("TenantTerminated")
// Calls from one thread at a time (the daemon's tenant round).
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "node/cluster/cluster.h"
#include "node/faults/quarantine_actions.h"
#include "node/slice.h"

namespace vgpu::node {

class SliceQuarantine final : public faults::QuarantineActions {
 public:
  // `now_ns`: CLOCK_MONOTONIC nanoseconds (the clock libvgpu.so compares the lease with).
  SliceQuarantine(SliceManager* slices, ClusterClient* cluster, std::string node_name,
                  std::string proc_root, int64_t pause_lease_ns, std::function<int64_t()> now_ns);

  Status Warn(const std::string& slice, const std::string& reason) override;
  Status LimitShare(const std::string& slice, int share_pct) override;
  Status Pause(const std::string& slice, bool paused) override;
  Status Terminate(const std::string& slice, const std::string& reason) override;

  // Test seam: the signal Terminate sends (default SIGKILL).
  void set_signal(int sig) { signal_ = sig; }
  int terminated_processes() const { return terminated_; }

 private:
  Result<SliceRecord> Find(const std::string& slice) const;
  void Event(const SliceRecord& r, const std::string& reason, const std::string& message);

  SliceManager* slices_;
  ClusterClient* cluster_;
  std::string node_name_;
  std::string proc_root_;
  int64_t lease_ns_;
  std::function<int64_t()> now_ns_;
  int signal_ = SIGKILL;
  int terminated_ = 0;
  std::map<std::string, std::map<std::string, uint32_t>> saved_share_;  // slice -> uuid -> max
};

}  // namespace vgpu::node
