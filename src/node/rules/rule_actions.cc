#include "node/rules/rule_actions.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/log.h"
#include "common/units.h"
#include "node/metrics/metrics_catalog.h"
#include "shm/arbiter.h"
#include "shm/region_file.h"
#include "shm/region_resize.h"
#include "slice/resize.h"

namespace vgpu::node {
namespace {

using analyze::Action;
using analyze::ActionType;

constexpr size_t kHistoryMax = 256;

// The slice's share and priority in force (from its region); false when it cannot be read.
bool ReadInForce(const std::string& region_path, int* share, int* priority) {
  shm::Mapping m;
  if (shm::Mapping::OpenExisting(region_path.c_str(), false, &m) != shm::RegionError::kOk) {
    return false;
  }
  uint32_t sm = shm::SmLimitInForce(m.region(), 0);
  *share = sm == 0 ? 100 : static_cast<int>(sm);
  *priority = shm::PriorityInForce(m.region());
  return true;
}

std::string DescribeAction(const Action& a) {
  return "rule " + a.rule + " on " + a.target + (a.detail.empty() ? "" : ": " + a.detail);
}

}  // namespace

bool ParseRuleTarget(const std::string& target, int* gpu, std::string* slice) {
  if (target.rfind("gpu", 0) != 0) return false;
  size_t slash = target.find('/');
  std::string index = target.substr(3, slash == std::string::npos ? std::string::npos : slash - 3);
  if (index.empty() || index.size() > 4 ||
      !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  *gpu = std::atoi(index.c_str());
  *slice = slash == std::string::npos ? "" : target.substr(slash + 1);
  return slash == std::string::npos || !slice->empty();
}

NodeActions::NodeActions(NodeActionHooks hooks, bool dry_run)
    : hooks_(std::move(hooks)), dry_run_(dry_run) {}

Result<SliceRecord> NodeActions::FindSlice(const std::string& target) const {
  int gpu = 0;
  std::string name;
  if (!ParseRuleTarget(target, &gpu, &name) || name.empty()) {
    return Status::InvalidArgument("not a slice target: " + target);
  }
  if (hooks_.slices == nullptr) return Status::FailedPrecondition("no slices");
  for (SliceRecord& r : hooks_.slices->List()) {
    if (r.name == name) return std::move(r);
  }
  return Status::NotFound("no slice " + name);
}

void NodeActions::Event(const std::string& type, const std::string& reason,
                        const std::string& message) {
  if (hooks_.cluster == nullptr) return;
  Status s = hooks_.cluster->PostNodeEvent(hooks_.node_name, type, reason, message);
  if (!s.ok()) VGPU_LOG_WARN("rule event %s: %s", reason.c_str(), s.ToString().c_str());
}

void NodeActions::Record(NodeActionRecord r) {
  VGPU_LOG_INFO("%s %s (%s): %s",
                r.fired ? "rule fired:" : "rule resolved:", DescribeAction(r.action).c_str(),
                r.outcome.c_str(), r.what.c_str());
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[{r.action.rule, std::string(analyze::ActionName(r.action.type)), r.outcome}];
  firing_[{r.action.rule, r.action.target}] = r.fired;
  history_.push_back(std::move(r));
  if (history_.size() > kHistoryMax) history_.erase(history_.begin());
}

void NodeActions::Fire(const Action& a) { Record(Apply(a, true)); }
void NodeActions::Resolve(const Action& a) { Record(Apply(a, false)); }

NodeActionRecord NodeActions::Apply(const Action& a, bool fire) {
  NodeActionRecord rec;
  rec.fired = fire;
  rec.action = a;
  auto done = [&](Status s, std::string what) {
    rec.what = std::move(what);
    rec.outcome = dry_run_ ? "dry_run" : s.ok() ? "applied" : "failed";
    if (!s.ok() && !dry_run_) rec.what += " (" + s.message() + ")";
    return rec;
  };
  const auto key = std::make_pair(a.rule, a.target);
  switch (a.type) {
    case ActionType::kAlert: {
      std::string what = (fire ? "alert: " : "alert resolved: ") + DescribeAction(a);
      if (!dry_run_) {
        Event(fire ? "Warning" : "Normal", fire ? "VgpuRuleAlert" : "VgpuRuleResolved", what);
      }
      return done(Status::Ok(), what);
    }
    case ActionType::kLowerShare:
    case ActionType::kRaiseShare: {
      auto r = FindSlice(a.target);
      if (!r) return done(r.error(), "change the share of " + a.target);
      int share = 100, priority = 0;
      if (!ReadInForce(r->region_path, &share, &priority)) {
        return done(Status::Unavailable("cannot read " + r->region_path), "share of " + r->name);
      }
      int want = 0;
      if (fire) {
        int step = static_cast<int>(std::lround(a.amount > 0 ? a.amount : 10));
        want = a.type == ActionType::kLowerShare ? share - step : share + step;
        want = std::clamp(want, 1, 100);
        if (!saved_.count(key)) saved_[key].share = share;
      } else {
        auto it = saved_.find(key);
        if (it == saved_.end() || it->second.share == 0) {
          rec.outcome = "skipped";
          rec.what = "nothing to restore for " + r->name;
          return rec;
        }
        want = it->second.share;
      }
      std::string what = "compute share of " + r->name + " " + std::to_string(share) + "% -> " +
                         std::to_string(want) + "%";
      Status s = Status::Ok();
      if (!dry_run_) {
        slice::SliceResize change;
        change.cores = want;
        auto res = slice::ResizeSlice(r->region_path, change);
        if (!res) s = res.error();
        if (s.ok()) {
          Event("Normal", fire ? "VgpuShareChanged" : "VgpuShareRestored",
                what + " (" + DescribeAction(a) + ")");
        }
      }
      if (!fire && (s.ok() || dry_run_)) saved_.erase(key);
      return done(s, what);
    }
    case ActionType::kRaisePriority: {
      auto r = FindSlice(a.target);
      if (!r) return done(r.error(), "raise the priority of " + a.target);
      int share = 100, priority = shm::kPriorityNormal;
      if (!ReadInForce(r->region_path, &share, &priority)) {
        return done(Status::Unavailable("cannot read " + r->region_path), "priority of " + r->name);
      }
      int want = 0;
      if (fire) {
        want = std::max(static_cast<int>(shm::kPriorityHigh), priority - 1);
        if (!saved_.count(key)) saved_[key].priority = priority;
      } else {
        auto it = saved_.find(key);
        if (it == saved_.end() || it->second.priority < 0) {
          rec.outcome = "skipped";
          rec.what = "nothing to restore for " + r->name;
          return rec;
        }
        want = it->second.priority;
      }
      std::string what = "priority of " + r->name + " " + shm::PriorityName(priority) + " -> " +
                         shm::PriorityName(want);
      Status s = Status::Ok();
      if (!dry_run_ && want != priority) {
        slice::SliceResize change;
        change.priority = want;
        auto res = slice::ResizeSlice(r->region_path, change);
        if (!res) s = res.error();
        if (s.ok()) Event("Normal", "VgpuPriorityChanged", what + " (" + DescribeAction(a) + ")");
      }
      if (!fire && (s.ok() || dry_run_)) saved_.erase(key);
      return done(s, what);
    }
    case ActionType::kRecommendMig:
    case ActionType::kRecommendMemoryLimit: {
      const bool mig = a.type == ActionType::kRecommendMig;
      std::string what = mig ? "MIG profile " + (a.detail.empty() ? "?" : a.detail) +
                                   " recommended for " + a.target
                             : "memory limit " + FormatBytes(static_cast<uint64_t>(a.amount)) +
                                   " recommended for " + a.target;
      if (!fire) what = "recommendation withdrawn: " + what;
      if (!dry_run_) {
        Event("Normal", mig ? "VgpuRecommendMig" : "VgpuRecommendMemoryLimit",
              what + " (rule " + a.rule + ")");
      }
      return done(Status::Ok(), what);
    }
    case ActionType::kQuarantineSlice: {
      auto r = FindSlice(a.target);
      if (!r) return done(r.error(), "quarantine " + a.target);
      std::string what = (fire ? "launches of " : "launches released: ") + r->name +
                         (fire ? " held at the gate" : "");
      Status s = Status::Ok();
      if (!dry_run_) {
        if (hooks_.quarantine == nullptr) {
          s = Status::FailedPrecondition("no quarantine actions");
        } else if (fire) {
          s = hooks_.quarantine->Pause(r->name, true);
          if (s.ok()) ++paused_[r->name];
          if (s.ok()) Event("Warning", "VgpuRuleQuarantine", what + " (" + DescribeAction(a) + ")");
        } else if (paused_.count(r->name) && --paused_[r->name] == 0) {
          paused_.erase(r->name);
          s = hooks_.quarantine->Pause(r->name, false);
        }
      }
      return done(s, what);
    }
    case ActionType::kQuarantineGpu: {
      int gpu = 0;
      std::string slice;
      std::string what = (fire ? "cordoned " : "uncordoned ") + a.target;
      if (!ParseRuleTarget(a.target, &gpu, &slice) || !slice.empty()) {
        return done(Status::InvalidArgument("not a GPU target"), what);
      }
      Status s = Status::Ok();
      if (!dry_run_) {
        s = hooks_.cordon_gpu ? hooks_.cordon_gpu(gpu, fire, DescribeAction(a))
                              : Status::FailedPrecondition("no GPU cordon");
        if (s.ok()) {
          Event(fire ? "Warning" : "Normal", fire ? "VgpuGpuCordoned" : "VgpuGpuUncordoned",
                what + " (" + DescribeAction(a) + ")");
        }
      }
      return done(s, what);
    }
  }
  return done(Status::Internal("unknown action"), "?");
}

void NodeActions::Renew() {
  if (dry_run_ || hooks_.quarantine == nullptr) return;
  for (const auto& [slice, n] : paused_) {
    Status s = hooks_.quarantine->Pause(slice, true);
    if (!s.ok()) VGPU_LOG_WARN("renewing the pause of %s: %s", slice.c_str(), s.ToString().c_str());
  }
}

std::vector<NodeActionRecord> NodeActions::History() const {
  std::lock_guard<std::mutex> lock(mu_);
  return history_;
}

void NodeActions::AddMetrics(MetricsBuilder& m) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [k, n] : counts_) {
    m.Add(metric::vgpu_rule_actions_total, {{"rule", k[0]}, {"action", k[1]}, {"outcome", k[2]}},
          static_cast<double>(n));
  }
  for (const auto& [k, on] : firing_) {
    m.Add(metric::vgpu_rule_firing, {{"rule", k.first}, {"target", k.second}}, on ? 1 : 0);
  }
}

}  // namespace vgpu::node
