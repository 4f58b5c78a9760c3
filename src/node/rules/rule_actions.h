// NodeActions: the tuning rules' actions (analyze/action_sink.h) carried out by the node daemon
// on its slices and GPUs. Targets are "gpuN/<slice name>" for slices and "gpuN" for GPUs (N the
// GPU's NVML index on the node, rule_signals.h).
//
//   alert                   a Warning Event on the node ("VgpuRuleAlert"); resolved: a Normal
//                           Event ("VgpuRuleResolved")
//   lower_share/raise_share the slice's compute share on every GPU, by `amount` points (within
//                           1..100), through live resize (slice/resize.h); resolved: the share
//                           it had before the rule fired
//   raise_priority          the slice's priority one level up (idle -> low -> normal -> high; not
//                           to realtime) through live resize; resolved: the level it had
//   recommend_mig           an Event ("VgpuRecommendMig") naming the profile (`detail`)
//   recommend_memory_limit  an Event ("VgpuRecommendMemoryLimit") with the limit (`amount` bytes)
//   quarantine_slice        the slice's launches held at the gate (QuarantineActions::Pause, the
//                           tenant levels' pause), renewed at every Renew(); resolved: released
//   quarantine_gpu          the GPU cordoned: kubelet is told its units are unhealthy, so nothing
//                           new is placed on it (the hook given); resolved: uncordoned
// Every action is counted in metrics (AddMetrics): vgpu_rule_actions_total{rule,action,outcome}
// (outcome applied, dry_run, skipped, failed) and vgpu_rule_firing{rule,target} (1 while firing).
// Dry run: nothing is changed and no Event posted; each action is logged and kept in History()
// as what would have been done.
//
// Calls from one thread at a time (the daemon's rule round); History() and AddMetrics() may be
// called from others.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "analyze/action_sink.h"
#include "node/cluster/cluster.h"
#include "node/faults/quarantine_actions.h"
#include "node/metrics/metrics_text.h"
#include "node/slice.h"

namespace vgpu::node {

struct NodeActionHooks {
  SliceManager* slices = nullptr;
  ClusterClient* cluster = nullptr;  // null: no Events
  std::string node_name;
  faults::QuarantineActions* quarantine = nullptr;  // null: quarantine_slice fails
  // Cordons (true) or uncordons GPU `index`; null: quarantine_gpu fails.
  std::function<Status(int index, bool cordon, const std::string& reason)> cordon_gpu;
};

struct NodeActionRecord {
  bool fired = true;  // false: resolved
  analyze::Action action;
  std::string outcome;  // "applied", "dry_run", "skipped", "failed"
  std::string what;     // what was (or would have been) done, in words
};

class NodeActions final : public analyze::ActionSink {
 public:
  NodeActions(NodeActionHooks hooks, bool dry_run);

  void Fire(const analyze::Action& a) override;
  void Resolve(const analyze::Action& a) override;
  // Renews the pause of every slice quarantined by a rule (call at every evaluation).
  void Renew();

  std::vector<NodeActionRecord> History() const;
  void AddMetrics(MetricsBuilder& m) const;
  bool dry_run() const { return dry_run_; }

 private:
  struct Saved {
    int share = 0;  // the share before the rule changed it (percent, 100 = none)
    int priority = -1;
  };
  NodeActionRecord Apply(const analyze::Action& a, bool fire);
  Result<SliceRecord> FindSlice(const std::string& target) const;
  void Event(const std::string& type, const std::string& reason, const std::string& message);
  void Record(NodeActionRecord r);

  NodeActionHooks hooks_;
  bool dry_run_;
  std::map<std::pair<std::string, std::string>, Saved> saved_;  // (rule, target)
  std::map<std::string, int> paused_;                           // slice -> rules pausing it
  mutable std::mutex mu_;                                       // guards the three below
  std::vector<NodeActionRecord> history_;
  std::map<std::vector<std::string>, uint64_t> counts_;  // {rule, action, outcome}
  std::map<std::pair<std::string, std::string>, bool> firing_;
};

// "gpu3/name" -> 3 and "name"; "gpu3" -> 3 and "". False for anything else.
bool ParseRuleTarget(const std::string& target, int* gpu, std::string* slice);

}  // namespace vgpu::node
