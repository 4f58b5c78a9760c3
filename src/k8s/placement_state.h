// PlacementState: the scheduler extender's view of the cluster's GPUs and of the pods placed on
// them, with the placement engine (src/sched) making the decisions.
//
// Contract:
// - Nodes come from their GPU inventories (UpsertNode / RemoveNode / ReplaceNodes); a change
//   marks the engine dirty and it is rebuilt (nodes, then every tracked pod re-reserved) before
//   the next decision. Inventories published by HAMi's device plugin are counted but are not
//   scheduling targets.
// - Pods come from the API server (UpsertPod / RemovePod / ReplacePods): a pod carrying an
//   assignment (vgpu.io/assigned-gpus, or HAMi's hami.io/vgpu-devices-allocated) is reserved in
//   the engine on the GPUs it names: "bound" when the pod has a node, otherwise "assumed" until
//   its assigned-at time plus the assume TTL. Terminal pods (Succeeded / Failed) and deleted pods
//   release their GPUs.
// - Filter / Score answer kube-scheduler for a pod's request over a list of node names: Filter
//   returns every feasible node (not just one) and a reason for the others, split into failures
//   preemption might fix and failures it cannot; Score gives 0..10 per node (the policy's
//   normalized score / 10; 0 for infeasible nodes).
// - Filter and Score remember, per request shape, each node's verdict (feasible per memory class,
//   or why not) and the last list scored, until anything changes: every change to the engine
//   (a node, a pod, a decision, a rebuild) starts a new version and forgets all of it, so an
//   answer never comes from an older state. Prioritize after filter for the same pod, and filters
//   of pods of one shape between changes, reuse that work (`memo_shapes`, 0 = off).
// - Assume picks GPUs on the node kube-scheduler chose and reserves them in one step (the engine
//   refuses any over-allocation, so no GPU is ever double-booked); the pod is then "in flight"
//   until BindSucceeded (bound) or BindFailed (released). Assume, BindSucceeded and BindFailed
//   name a generation so a late answer about an older attempt changes nothing.
// - ExpiredAssumptions lists assumed pods past their deadline that are not in flight; the caller
//   asks the API server and calls ExpireIfUnbound only for pods it found unbound, so a reservation
//   is never dropped for a pod that is running.
// - Thread-safe: one mutex around the engine; every call takes microseconds to a few ms.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/rng.h"
#include "k8s/gpu_constraints.h"
#include "k8s/gpu_inventory.h"
#include "k8s/name_index.h"
#include "k8s/pod_assignment.h"
#include "k8s/pod_request.h"
#include "sched/scheduler.h"

namespace vgpu::k8s {

using SystemClock = std::chrono::system_clock;

// What the API server says about a pod.
struct PodInfo {
  std::string uid, ns, name;
  std::string node_name;  // spec.nodeName; "" while unbound
  bool terminal = false;  // phase Succeeded or Failed
  std::optional<PodAssignment> assignment;
  std::optional<SystemClock::time_point> assigned_at;
};
// Reads a Pod object. A malformed assignment annotation is an error naming the pod.
Result<PodInfo> PodInfoOf(const Json& pod);

struct StateOptions {
  std::string policy = "default";
  std::map<std::string, std::string> policy_params;
  RequestOptions request;
  std::chrono::milliseconds assume_ttl{120000};
  uint64_t seed = 42;
  std::function<SystemClock::time_point()> clock = [] { return SystemClock::now(); };
  size_t memo_shapes = 32;  // request shapes whose verdicts are kept per version; 0 = none
};

struct FilterResult {
  std::vector<std::string> feasible;
  std::map<std::string, std::string> failed;        // preemption might help
  std::map<std::string, std::string> unresolvable;  // preemption cannot help
};

// Filter's answer per requested node, in request order, with the reasons shared.
struct NodeVerdicts {
  enum Kind : uint8_t { kFeasible = 0, kFailed = 1, kUnresolvable = 2 };
  std::vector<uint8_t> kind;         // per requested node
  std::vector<uint8_t> reason;       // per requested node: index into reasons (not for feasible)
  std::vector<std::string> reasons;  // texts, "vgpu: ..."
  size_t counts[3] = {0, 0, 0};      // by kind
};

struct AssumeTicket {
  PodAssignment assignment;
  uint64_t generation = 0;
};

class PlacementState {
 public:
  // A tracked pod and the generation of its current decision.
  struct Expired {
    std::string uid, ns, name;
    uint64_t generation = 0;
  };

  // Fails when the policy name or its parameters are bad (kNotFound / kInvalidArgument).
  static Result<std::unique_ptr<PlacementState>> Create(StateOptions options);
  const StateOptions& options() const { return options_; }

  void UpsertNode(const std::string& name, const NodeInventory& inventory);
  void RemoveNode(const std::string& name);
  void ReplaceNodes(std::map<std::string, NodeInventory> nodes);

  void UpsertPod(const PodInfo& pod);
  void RemovePod(const std::string& uid);
  void ReplacePods(const std::vector<PodInfo>& pods);

  FilterResult Filter(const PodGpuRequest& request, const std::vector<std::string>& nodes);
  std::vector<int64_t> Score(const PodGpuRequest& request, const std::vector<std::string>& nodes);
  // The same over names that are views (an extender request's body); Filter's answer as
  // verdicts. Identical decisions.
  void FilterVerdicts(const PodGpuRequest& request, std::span<const std::string_view> nodes,
                      NodeVerdicts* out);
  std::vector<int64_t> ScoreViews(const PodGpuRequest& request,
                                  std::span<const std::string_view> nodes);
  // Changes so far (each starts a new version of the state; tests, metrics).
  uint64_t version();

  Result<AssumeTicket> Assume(const std::string& uid, const std::string& ns,
                              const std::string& name, const PodGpuRequest& request,
                              const std::string& node);
  // A pod that holds GPUs on a node other than `node` (bound there, or an earlier bind left
  // unknown) and is not in flight: Assume refuses to move it until the caller has asked the API
  // server and called ConfirmBound or ExpireIfUnbound.
  std::optional<Expired> UnsettledElsewhere(const std::string& uid, const std::string& node);
  void BindSucceeded(const std::string& uid, uint64_t generation);
  void BindFailed(const std::string& uid, uint64_t generation);
  // The API server did not say whether the binding happened: keep the GPUs as assumed (not in
  // flight) so the expiry check settles it.
  void BindUnknown(const std::string& uid, uint64_t generation);

  std::vector<Expired> ExpiredAssumptions();
  // Releases the GPUs and returns the released decision (the caller clears it from the pod);
  // std::nullopt when the pod changed meanwhile. An unbound pod that still shows this decision
  // is not tracked again (a late watch event); a bound one is.
  std::optional<PodAssignment> ExpireIfUnbound(const std::string& uid, uint64_t generation);
  void ConfirmBound(const std::string& uid, uint64_t generation);

  // ---- Introspection (metrics, tests) ----
  struct GpuUsage {
    std::string node, uuid, model;
    int index = 0;
    bool healthy = true;
    int64_t memory_mib = 0, memory_used_mib = 0;
    int32_t milli_used = 0;
    int pods = 0;
  };
  std::vector<GpuUsage> Usage();
  struct Counts {
    size_t nodes = 0, gpus = 0;
    size_t pods_bound = 0, pods_assumed = 0, pods_unplaced = 0;
    uint64_t rebuilds = 0, conflicts = 0, expired = 0;
  };
  Counts counts();
  // Recomputes every GPU's load from the tracked pods and checks that none exceeds its compute or
  // memory, and that the engine agrees. Internal error naming the GPU otherwise.
  Status CheckConsistency();

 private:
  struct Tracked {
    std::string ns, name;
    PodAssignment assignment;
    bool bound = false;
    bool in_flight = false;
    SystemClock::time_point deadline;
    uint64_t generation = 0;
    std::vector<sched::PodKey> keys;  // engine reservations; empty = not placed
  };
  struct Variant {
    int64_t capacity_mib = 0;
    sched::PodRequest request;
  };
  struct Engine {
    std::unique_ptr<sched::ModelRegistry> models;
    std::unique_ptr<sched::Cluster> cluster;
    std::optional<sched::Scheduler> scheduler;
    ConstrainedSelector* selector = nullptr;   // owned by the scheduler's policy
    std::vector<std::vector<GpuFacts>> facts;  // by engine node id
    std::vector<uint8_t> schedulable;          // by engine node id
    std::vector<std::string> model_name;       // by model id
    std::vector<int64_t> model_capacity;       // by model id
    std::vector<std::string> node_names;       // by engine node id
    NameIndex by_name;                         // over node_names
  };

  // Verdicts of one request shape at one version (see the contract).
  struct Memo {
    enum State : uint8_t { kUnknown = 0, kFits = 1, kCould = 2, kNever = 3 };
    PodGpuRequest request;
    std::vector<Variant> variants;
    std::string why_none;
    std::vector<uint8_t> state;              // by engine node id
    std::vector<std::vector<uint8_t>> fits;  // [variant][engine node id]
    bool scored = false;                     // the last Score: its nodes and answer
    std::vector<sched::NodeId> scored_ids;
    std::vector<int64_t> scores;
  };

  explicit PlacementState(StateOptions options);
  void Changed() { ++version_; }
  Memo& MemoFor(const PodGpuRequest& r);
  void Resolve(Memo& m, const PodGpuRequest& r, const std::vector<sched::NodeId>& todo);
  Status BuildEngine(Engine* e) const;
  void RebuildIfDirty();
  void PlaceNow(Tracked& t);
  void Unplace(Tracked& t);
  void Track(const std::string& uid, Tracked t);
  void Forget(const std::string& uid);
  // Per memory class: the engine request of `r`, or why it cannot work there.
  std::vector<Variant> Variants(const PodGpuRequest& r, std::string* why_none);
  PodAssignment BuildAssignment(const PodGpuRequest& req, const Variant& v, sched::NodeId node,
                                sched::GpuSet gpus) const;
  std::optional<sched::NodeId> NodeIdOf(const std::string& name) const;
  // Whether node n could hold the request were it empty (else preemption cannot help).
  bool CouldEverFit(const PodGpuRequest& req, const std::vector<Variant>& variants,
                    sched::NodeId n) const;
  static std::string ReasonText(const std::vector<Variant>& variants, bool could);

  const StateOptions options_;
  std::mutex mu_;
  std::map<std::string, NodeInventory> nodes_;
  std::unordered_map<std::string, Tracked> pods_;                     // by pod UID
  std::unordered_map<std::string, PodAssignment> expired_decisions_;  // by pod UID
  Engine engine_;
  ConstraintContext ctx_;
  bool dirty_ = true;
  sched::PodKey next_key_ = 1;
  uint64_t next_generation_ = 1;
  Rng rng_;
  uint64_t rebuilds_ = 0, conflicts_ = 0, expired_ = 0;
  uint64_t version_ = 1, memo_version_ = 0;
  std::vector<std::unique_ptr<Memo>> memos_;
  size_t memo_next_ = 0;  // the slot replaced next when all are taken
};

}  // namespace vgpu::k8s
