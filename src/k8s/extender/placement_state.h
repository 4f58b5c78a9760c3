// PlacementState: the scheduler extender's view of the cluster's GPUs, CPU and memory and of the
// pods placed on them, with the placement engine (src/sched) making the decisions.
//
// Contract:
// - Nodes come from their GPU inventories and their allocatable CPU and memory (UpsertNode /
//   RemoveNode / ReplaceNodes); a change marks the engine dirty and it is rebuilt (nodes, then
//   every tracked pod re-reserved, then the observed workload replayed to the policy) before the
//   next decision. Inventories published by HAMi's device plugin are counted but are not
//   scheduling targets. Nodes without an inventory are not in the engine.
// - Pods come from the API server (UpsertPod / RemovePod / ReplacePods): every unfinished pod on
//   an engine node has its CPU and memory requests counted there (so the engine sees the free
//   CPU and memory that kube-scheduler sees); a pod carrying an assignment
//   (vgpu.io/assigned-gpus, or HAMi's hami.io/vgpu-devices-allocated) also holds the GPUs it
//   names: "bound" when the pod has a node, otherwise "assumed" until its assigned-at time plus
//   the assume TTL. Terminal pods (Succeeded / Failed) and deleted pods release everything.
// - The policy observes every pod once (by UID), when it arrives: a pending pod naming
//   StateOptions::scheduler_name when the watch shows it, or when it is first filtered, or
//   when first seen on an engine node (a restart, another scheduler), as `vgpu sim` shows each
//   arriving pod, placed or not, to the policy before placing it.
// - Filter / Score answer kube-scheduler for a pod's request over a list of node names: Filter
//   returns the feasible nodes and a reason for the others, split into failures preemption might
//   fix and failures it cannot; Score gives 0..10 per node (extender_scores.h: the node the
//   engine would choose gets 10, the others follow the policy's raw scores on one scale; 0 for
//   infeasible nodes). Pods without GPUs are judged on CPU and memory on engine nodes and pass
//   on other nodes (scored 10 there: they strand no GPU); a pod that requests nothing passes
//   everywhere unjudged.
// - Filter modes (StateOptions::filter_mode). kAll: every feasible node. kNarrow: only the nodes
//   whose score would be at least 10 - narrow_tolerance (0 = the engine's choice alone; pods
//   without GPUs keep every node outside the engine); the others are answered "narrowed". When
//   a single engine node remains, the pod's resources are held there at once (the engine's GPU
//   choice, nothing written to the API server), so the next pod, filtered while kube-scheduler
//   still binds this one, sees them taken; Assume on that node takes the hold over. A hold
//   steers filters only, it never refuses a bind: a bind that finds its node short because of
//   other pods' holds takes their room (oldest hold first; a hold whose GPUs no longer fit is
//   released and its pod's bind decides afresh). A filter of a pod that still has a hold is
//   kube-scheduler's retry after something else rejected the node: the hold is released and that
//   node is left out of the pod's narrowing from then on (until all feasible nodes were left
//   out). A hold that reaches the assume TTL is released by ExpiredAssumptions, the same way; a
//   hold whose pod the watch shows bound to another node (another binder) is released, and the
//   pod counts there.
// - Filter and Score remember, per request shape, each node's verdict (feasible per memory class,
//   or why not) and the last ranking, until anything changes: every change to the engine
//   (a node, a pod, a decision, a rebuild) starts a new version and forgets all of it, so an
//   answer never comes from an older state. Prioritize after filter for the same pod, and filters
//   of pods of one shape between changes, reuse that work (`memo_shapes`, 0 = off).
// - Assume picks GPUs on the node kube-scheduler chose and reserves them in one step (the engine
//   refuses any over-allocation, so no GPU is ever double-booked); the pod is then "in flight"
//   until BindSucceeded (bound) or BindFailed (released). Assume, BindSucceeded and BindFailed
//   name a generation so a late answer about an older attempt changes nothing. Pods without GPUs
//   are assumed too (their CPU and memory), on any node.
// - Ties among equal scores go to a fixed order of the nodes: a hash of the node name with
//   StateOptions::seed, stable while nodes come and go (as `vgpu sim`'s per-seed node order).
// - ExpiredAssumptions lists assumed pods past their deadline that are not in flight; the caller
//   asks the API server and calls ExpireIfUnbound only for pods it found unbound, so a reservation
//   is never dropped for a pod that is running. Filter holds past their deadline are released by
//   the call itself (nothing of theirs is on the API server) and not listed.
// - MIG (placement_mig.cc, mig_placement.h): a pod asking for a MIG profile by name
//   (nvidia.com/mig-<profile>) goes only to "mig" / "mig-dynamic" GPUs; a one-GPU pod with a
//   memory size (nvidia.com/gpumem) goes to a software slice when one fits on the node (shared
//   GPUs), else to a MIG instance (the smallest fitting one). Filter says whether an instance
//   fits (ChooseMig's reason when not), Score ranks MIG-served nodes by the choice (least
//   instance memory, then the resulting layout's capacity: the largest profile kept placeable)
//   below every node a software slice fits, and Assume records the instance as the assignment's
//   "mig" entry. The instances of tracked pods (assumed or bound, not yet reported by the node)
//   count as taken until the pod goes away; none is given twice (CheckConsistency checks it).
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
#include "k8s/extender/extender_scores.h"
#include "k8s/extender/gpu_constraints.h"
#include "k8s/extender/mig_placement.h"
#include "k8s/extender/name_index.h"
#include "k8s/wire/gpu_inventory.h"
#include "k8s/wire/host_request.h"
#include "k8s/wire/pod_assignment.h"
#include "k8s/wire/pod_request.h"
#include "sched/scheduler.h"
#include "topo/bandwidth.h"

namespace vgpu::k8s {

using SystemClock = std::chrono::system_clock;

// What the API server says about a pod.
struct PodInfo {
  std::string uid, ns, name;
  std::string node_name;  // spec.nodeName; "" while unbound
  bool terminal = false;  // phase Succeeded or Failed
  std::optional<PodAssignment> assignment;
  std::optional<SystemClock::time_point> assigned_at;
  HostResources host;                      // CPU and memory requests (PodHostRequestOf)
  std::string scheduler_name;              // spec.schedulerName
  std::optional<PodGpuRequest> requested;  // a pending pod's request (unbound, no decision)
};
// Reads a Pod object. A malformed assignment annotation is an error naming the pod.
Result<PodInfo> PodInfoOf(const Json& pod);
// The same, with `requested` filled for a pending pod without a decision.
Result<PodInfo> PodInfoOf(const Json& pod, const RequestOptions& options);

enum class FilterMode { kAll, kNarrow };

struct StateOptions {
  std::string policy = "default";
  std::map<std::string, std::string> policy_params;
  RequestOptions request;
  std::chrono::milliseconds assume_ttl{120000};
  uint64_t seed = 42;
  std::function<SystemClock::time_point()> clock = [] { return SystemClock::now(); };
  size_t memo_shapes = 32;  // request shapes whose verdicts are kept per version; 0 = none
  FilterMode filter_mode = FilterMode::kAll;
  // Pending pods naming this scheduler are shown to the policy when they appear (their arrival),
  // whether or not kube-scheduler ever asks about them.
  std::string scheduler_name = "vgpu-scheduler";
  int narrow_tolerance = 0;  // 0..10, in extender priority points
};

// A node as the engine needs it: its GPU inventory and its allocatable CPU and memory.
struct NodeEntry {
  NodeInventory inventory;
  HostResources allocatable;
  friend bool operator==(const NodeEntry&, const NodeEntry&) = default;
};

// The pod a filter, score or bind is about ("" = unknown: no observation, no hold).
struct PodRef {
  std::string_view uid, ns, name;
};

struct FilterResult {
  std::vector<std::string> feasible;
  std::map<std::string, std::string> failed;        // preemption might help
  std::map<std::string, std::string> unresolvable;  // preemption cannot help (narrowed too)
  size_t narrowed = 0;                              // of `unresolvable`: left out by narrowing
};

// Filter's answer per requested node, in request order, with the reasons shared.
struct NodeVerdicts {
  // kNarrowed: feasible, but left out by the narrow filter mode (answered as unresolvable).
  enum Kind : uint8_t { kFeasible = 0, kFailed = 1, kUnresolvable = 2, kNarrowed = 3 };
  std::vector<uint8_t> kind;         // per requested node
  std::vector<uint8_t> reason;       // per requested node: index into reasons (not for feasible)
  std::vector<std::string> reasons;  // texts, "vgpu: ..."
  size_t counts[4] = {0, 0, 0, 0};   // by kind
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

  // `allocatable` defaults to none: pods that request CPU or memory do not fit there.
  void UpsertNode(const std::string& name, const NodeInventory& inventory,
                  const HostResources& allocatable = {});
  void RemoveNode(const std::string& name);
  void ReplaceNodes(std::map<std::string, NodeEntry> nodes);
  void ReplaceNodes(const std::map<std::string, NodeInventory>& nodes);

  void UpsertPod(const PodInfo& pod);
  void RemovePod(const std::string& uid);
  void ReplacePods(const std::vector<PodInfo>& pods);

  FilterResult Filter(const PodGpuRequest& request, const std::vector<std::string>& nodes,
                      const PodRef& pod = {});
  std::vector<int64_t> Score(const PodGpuRequest& request, const std::vector<std::string>& nodes,
                             const PodRef& pod = {});
  // The same over names that are views (an extender request's body); Filter's answer as
  // verdicts. Identical decisions.
  void FilterVerdicts(const PodRef& pod, const PodGpuRequest& request,
                      std::span<const std::string_view> nodes, NodeVerdicts* out);
  std::vector<int64_t> ScoreViews(const PodRef& pod, const PodGpuRequest& request,
                                  std::span<const std::string_view> nodes);
  // Changes so far (each starts a new version of the state; tests, metrics).
  uint64_t version();

  Result<AssumeTicket> Assume(const std::string& uid, const std::string& ns,
                              const std::string& name, const PodGpuRequest& request,
                              const std::string& node);
  // A pod that holds GPUs on a node other than `node` (bound there, or an earlier bind left
  // unknown) and is not in flight: Assume refuses to move it until the caller has asked the API
  // server and called ConfirmBound or ExpireIfUnbound. A filter's hold is not such a pod.
  std::optional<Expired> UnsettledElsewhere(const std::string& uid, const std::string& node);
  void BindSucceeded(const std::string& uid, uint64_t generation);
  void BindFailed(const std::string& uid, uint64_t generation);
  // The API server did not say whether the binding happened: keep the GPUs as assumed (not in
  // flight) so the expiry check settles it.
  void BindUnknown(const std::string& uid, uint64_t generation);

  std::vector<Expired> ExpiredAssumptions();
  // Releases the GPUs and returns the released decision (the caller clears it from the pod);
  // std::nullopt when the pod changed meanwhile, or when nothing was written on the pod (a
  // filter's hold, a pod without GPUs). An unbound pod that still shows this decision
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
    size_t pods_bound = 0, pods_assumed = 0, pods_unplaced = 0;  // pods with GPUs
    size_t pods_held = 0;  // filter holds (narrow mode), with or without GPUs
    uint64_t rebuilds = 0, conflicts = 0, expired = 0;
  };
  Counts counts();
  // Recomputes every GPU's load and every node's CPU and memory from the tracked pods and checks
  // that no GPU exceeds its compute or memory, and that the engine agrees. Internal error naming
  // the GPU or node otherwise.
  Status CheckConsistency();

 private:
  // Reason slots of NodeVerdicts::reasons.
  enum Reason : uint8_t {
    kNoInventory,
    kHami,
    kNoVariant,
    kCould,
    kNever,
    kHostShort,
    kHostNever,
    kNarrowedOut,
    kNumReasons
  };
  struct Tracked {
    std::string ns, name;
    PodAssignment assignment;  // no containers = a pod without GPUs
    HostResources host;
    std::string node;  // where it counts: spec.nodeName, else the decision's or the hold's node
    bool bound = false;
    bool in_flight = false;
    bool held = false;  // a filter's hold (narrow mode), not yet assumed by a bind
    SystemClock::time_point deadline;
    uint64_t generation = 0;
    std::vector<sched::PodKey> keys;  // GPU reservations in the engine
    int64_t host_node = -1;           // engine node charged with `host`; -1 = none
    bool mig_placed = false;          // its MIG instances count on `node` (placement_mig.cc)
    bool HasGpus() const { return !assignment.containers.empty(); }
    bool Placed() const { return !keys.empty() || host_node >= 0 || mig_placed; }
    bool HoldsGpus() const { return !keys.empty() || mig_placed; }
  };
  // The CPU and memory of the tracked pods on one engine node, and its engine reservation.
  struct HostLoad {
    int64_t cpu_milli = 0, memory_mib = 0;
    sched::PodKey key = 0;  // 0 = none
  };
  // One observed pod spec, independent of the engine's model ids (kept across rebuilds).
  struct ObservedSpec {
    sched::PodRequest request;  // models left empty
    std::vector<std::string> use_types, nouse_types;
    uint64_t count = 0;
  };
  struct Variant {
    int64_t capacity_mib = 0;
    sched::PodRequest request;
  };
  struct Engine {
    std::unique_ptr<sched::ModelRegistry> models;
    std::unique_ptr<sched::Cluster> cluster;
    std::optional<sched::Scheduler> scheduler;
    ConstrainedSelector* selector = nullptr;                 // owned by the scheduler's policy
    std::vector<std::vector<GpuFacts>> facts;                // by engine node id
    std::vector<uint8_t> schedulable;                        // by engine node id
    std::vector<std::string> model_name;                     // by model id
    std::vector<int64_t> model_capacity;                     // by model id
    std::vector<std::string> node_names;                     // by engine node id
    NameIndex by_name;                                       // over node_names
    std::vector<HostLoad> host;                              // by engine node id
    std::vector<std::unique_ptr<topo::Evaluator>> topology;  // by engine node id
  };

  // Verdicts of one request shape at one version (see the contract).
  struct Memo {
    // kFits: feasible; kCould / kNever: the GPUs do not fit now / ever; kHost / kHostNever: the
    // CPU or memory does not fit now / ever.
    enum State : uint8_t {
      kUnknown = 0,
      kFits = 1,
      kCould = 2,
      kNever = 3,
      kHost = 4,
      kHostNever = 5
    };
    PodGpuRequest request;
    std::vector<Variant> variants;
    std::string why_none;
    std::vector<uint8_t> state;              // by engine node id
    std::vector<std::vector<uint8_t>> fits;  // [variant][engine node id]
    bool scored = false;  // the last ranking: its nodes, raw scores, choice and priorities
    std::vector<sched::NodeId> scored_ids;
    std::vector<int64_t> raw;       // per scored id (feasible ones)
    std::vector<uint8_t> feasible;  // per scored id
    std::vector<int> variant;       // per scored id: the memory class of its raw score
    size_t choice = 0;              // index into scored_ids, or kNoChoice
    std::vector<int64_t> scores;    // 0..10 per scored id
    // MIG (placement_mig.cc), by engine node id: served by a MIG instance, the instance's raw
    // score, or why no instance fits ("" = not judged).
    std::vector<uint8_t> mig;
    std::vector<int64_t> mig_raw;
    std::vector<std::string> mig_why;
  };

  explicit PlacementState(StateOptions options);
  void Changed() { ++version_; }
  Memo& MemoFor(const PodGpuRequest& r);
  void Resolve(Memo& m, const PodGpuRequest& r, const std::vector<sched::NodeId>& todo);
  // ---- MIG (placement_mig.cc) ----
  // The nodes of `todo` that no software slice serves, judged for a MIG instance.
  void ResolveMig(Memo& m, const PodGpuRequest& r, const std::vector<sched::NodeId>& todo);
  // MIG-served nodes' raw scores put below every software-slice node's (Rank).
  void RankMig(Memo& m, const std::vector<sched::NodeId>& ids);
  // Per-node MIG reasons into the filter's answer.
  void MigReasons(const Memo& m, const std::vector<sched::NodeId>& ids, NodeVerdicts* out) const;
  bool HasMigGpus(sched::NodeId n) const;
  // The pod's MIG choice on engine node `n` given the tracked pods' instances there.
  Result<MigChoice> MigChoiceOn(const PodGpuRequest& r, sched::NodeId n) const;
  // Assume by a MIG instance on `n`.
  Result<AssumeTicket> AssumeMig(const std::string& uid, const std::string& ns,
                                 const std::string& name, const PodGpuRequest& r, sched::NodeId n);
  Status CheckMigConsistency() const;
  // Ranks `ids` (engine nodes) for `r` into the memo: raw scores, the engine's choice, 0..10.
  void Rank(Memo& m, const PodGpuRequest& r, const std::vector<sched::NodeId>& ids);
  // The narrow filter mode over the verdicts (placement_narrow.cc).
  // `ids`: the feasible engine nodes; `pos`: their places in the request.
  void Narrow(const PodRef& pod, const PodGpuRequest& r, Memo& m,
              const std::vector<sched::NodeId>& ids, const std::vector<size_t>& pos,
              NodeVerdicts* out);
  // A filter's hold of `r` on engine node `id`, memory class `variant`.
  void Hold(const PodRef& pod, const PodGpuRequest& r, const Variant& variant, sched::NodeId id);
  // A hold of `uid` that a new filter finds: released, its node left out of later narrowing.
  void ReleaseHold(const std::string& uid);
  // Assume's GPU choice on engine node `id` (the memory class the policy scores best there);
  // std::nullopt when the GPUs do not fit.
  std::optional<AssumeTicket> DecideOnNode(const std::string& uid, const std::string& ns,
                                           const std::string& name, const PodGpuRequest& r,
                                           const std::vector<Variant>& variants, sched::NodeId id);
  // The same when what is short on the node are other pods' holds: they give way, oldest first,
  // until the pod fits; those that still fit afterwards are kept (placement_narrow.cc).
  std::optional<AssumeTicket> AssumeOverHolds(const std::string& uid, const std::string& ns,
                                              const std::string& name, const PodGpuRequest& r,
                                              const std::vector<Variant>& variants,
                                              sched::NodeId id);
  // Reserves a displaced hold's GPUs again on node `n`; false when they no longer fit.
  bool RestoreHold(Tracked& t, sched::NodeId n);
  // Reserves `r` on engine node `id` with memory class `v` and tracks the pod; false when the
  // node cannot take it.
  std::optional<AssumeTicket> Decide(const std::string& uid, const std::string& ns,
                                     const std::string& name, const PodGpuRequest& r,
                                     const Variant& v, sched::NodeId id, bool held);
  // Shows the pod to the policy once (by UID; "" = never).
  void ObserveOnce(const std::string& uid, const sched::PodRequest& r,
                   const std::vector<std::string>& use_types,
                   const std::vector<std::string>& nouse_types);
  void ObserveRequest(const std::string& uid, const PodGpuRequest& r);
  void ReplayObservations();
  sched::ModelSet ModelsOf(const std::vector<std::string>& use_types,
                           const std::vector<std::string>& nouse_types) const;
  void ChargeHost(Tracked& t, sched::NodeId n);
  void UnchargeHost(Tracked& t);
  void SyncHostReservation(sched::NodeId n);
  std::vector<sched::NodeId> TieOrder(const std::vector<std::string>& names) const;
  Status BuildEngine(Engine* e) const;
  void RebuildIfDirty();
  void PlaceNow(Tracked& t);
  void PlaceGpus(Tracked& t, sched::NodeId n);
  void Unplace(Tracked& t);
  void Track(const std::string& uid, Tracked t);
  void Forget(const std::string& uid);
  // Per memory class: the engine request of `r`, or why it cannot work there.
  std::vector<Variant> Variants(const PodGpuRequest& r, std::string* why_none);
  // `order`: the GPUs in rank order (the pod's communication pattern); empty: index order.
  PodAssignment BuildAssignment(const PodGpuRequest& req, const Variant& v, sched::NodeId node,
                                sched::GpuSet gpus, const std::vector<int>& order = {}) const;
  std::optional<sched::NodeId> NodeIdOf(const std::string& name) const;
  // Whether node n could hold the request were it empty (else preemption cannot help).
  bool CouldEverFit(const PodGpuRequest& req, const std::vector<Variant>& variants,
                    sched::NodeId n) const;
  static std::string ReasonText(const std::vector<Variant>& variants, bool could);

  const StateOptions options_;
  std::mutex mu_;
  std::map<std::string, NodeEntry> nodes_;
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
  size_t memo_next_ = 0;                               // the slot replaced next when all are taken
  std::unordered_map<std::string, uint8_t> observed_;  // pod UIDs shown to the policy
  std::vector<ObservedSpec> observations_;             // first seen first
  std::unordered_map<std::string, size_t> observation_index_;           // by spec text
  std::unordered_map<std::string, std::vector<std::string>> excluded_;  // by pod UID: node names
};

}  // namespace vgpu::k8s
