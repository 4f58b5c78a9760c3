#include "node/slice_quarantine.h"

#include <signal.h>

#include "common/log.h"
#include "node/arbiter_usage.h"
#include "node/slice_control.h"

#include "shm/arbiter_cap.h"
#include "shm/arbiter_file.h"
#include "shm/region_file.h"
#include "shm/region_resize.h"

namespace vgpu::node {

SliceQuarantine::SliceQuarantine(SliceManager* slices, ClusterClient* cluster,
                                 std::string node_name, std::string proc_root,
                                 int64_t pause_lease_ns, std::function<int64_t()> now_ns)
    : slices_(slices),
      cluster_(cluster),
      node_name_(std::move(node_name)),
      proc_root_(std::move(proc_root)),
      lease_ns_(pause_lease_ns),
      now_ns_(std::move(now_ns)) {}

Result<SliceRecord> SliceQuarantine::Find(const std::string& slice) const {
  for (SliceRecord& r : slices_->List()) {
    if (r.name == slice) return std::move(r);
  }
  return Status::NotFound("no slice " + slice);
}

void SliceQuarantine::Event(const SliceRecord& r, const std::string& reason,
                            const std::string& message) {
  std::string text = "slice " + r.name + " (pod " + r.spec.pod_ns + "/" + r.spec.pod_name +
                     ", container " + r.spec.container + "): " + message;
  VGPU_LOG_WARN("%s: %s", reason.c_str(), text.c_str());
  Status s = cluster_->PostNodeEvent(node_name_, "Warning", reason, text);
  if (!s.ok()) VGPU_LOG_WARN("node event: %s", s.ToString().c_str());
}

Status SliceQuarantine::Warn(const std::string& slice, const std::string& reason) {
  auto r = Find(slice);
  if (!r) return r.error();
  Event(*r, "TenantWarned", reason);
  return Status::Ok();
}

Status SliceQuarantine::LimitShare(const std::string& slice, int share_pct) {
  auto r = Find(slice);
  if (!r) return r.error();
  if (share_pct < 0 || share_pct > 100) return Status::InvalidArgument("share out of range");
  if (!r->arbitrated || r->arbiter_dir.empty()) {
    return Status::FailedPrecondition("slice " + slice +
                                      " has no compute arbitration: its share cannot be lowered");
  }
  const uint64_t key = SliceKeyOf(r->region_path);
  Status result = Status::Ok();
  // A share resized live since the limit was set is what a restore goes back to.
  shm::Mapping region;
  const bool have_region =
      shm::Mapping::OpenExisting(r->region_path.c_str(), false, &region) == shm::RegionError::kOk;
  int index = -1;
  for (const SliceDevice& d : r->spec.devices) {
    ++index;
    char path[1024];
    if (!shm::ArbiterPath(r->arbiter_dir.c_str(), d.uuid.c_str(), path, sizeof path)) continue;
    shm::ArbiterMapping m;
    shm::RegionError e = shm::ArbiterMapping::OpenExisting(path, true, &m);
    uint32_t previous = 0;
    uint32_t want = static_cast<uint32_t>(share_pct);
    if (share_pct == 0) {
      auto saved = saved_share_[slice].find(d.uuid);
      if (saved == saved_share_[slice].end()) continue;
      want = saved->second;
      if (have_region && shm::ResizeSeq(region.region()) != 0) {
        uint32_t resized = shm::SmLimitInForce(region.region(), index);
        want = resized == 0 ? 100 : resized;
      }
    }
    if (e == shm::RegionError::kOk) {
      e = shm::CapArbiterSlice(m.arbiter(), key, want, shm::CurrentProcIdentity(), &previous);
    }
    if (e == shm::RegionError::kOk) {
      if (share_pct > 0 && !saved_share_[slice].count(d.uuid)) {
        saved_share_[slice][d.uuid] = previous;
      }
    } else if (e != shm::RegionError::kNotReady) {  // kNotReady: not running on that GPU yet
      result = Status::Unavailable(std::string("arbiter ") + path + ": " + shm::RegionErrorText(e));
    }
  }
  if (share_pct == 0) saved_share_.erase(slice);
  SliceControlUpdate u;
  u.share_cap_pct = static_cast<uint32_t>(share_pct);
  Status w = WriteSliceControl(r->region_path, u);
  if (share_pct > 0) {
    Event(*r, "TenantLimited", "compute share lowered to " + std::to_string(share_pct) + " %");
  }
  return result.ok() ? w : result;
}

Status SliceQuarantine::Pause(const std::string& slice, bool paused) {
  auto r = Find(slice);
  if (!r) return r.error();
  SliceControlUpdate u;
  u.pause_until_ns = paused ? static_cast<uint64_t>(now_ns_() + lease_ns_) : 0;
  return WriteSliceControl(r->region_path, u);
}

Status SliceQuarantine::Terminate(const std::string& slice, const std::string& reason) {
  auto r = Find(slice);
  if (!r) return r.error();
  auto view = ReadSliceControl(r->region_path);
  if (!view) return view.error();
  int n = 0;
  for (uint32_t pid : HostPidsOf(proc_root_, view->processes)) {
    if (::kill(static_cast<pid_t>(pid), signal_) == 0) ++n;
  }
  terminated_ += n;
  Event(*r, "TenantTerminated", std::to_string(n) + " process(es) ended: " + reason);
  return Status::Ok();
}

}  // namespace vgpu::node
