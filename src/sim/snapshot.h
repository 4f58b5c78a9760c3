// The FGD paper's snapshot experiment (Weng et al., ATC'23; hkust-adsl/kubernetes-scheduler-
// simulator), one policy and one seed at a time.
//
// Protocol, with all randomness from one vgpu::Rng seeded with the seed, used in this order:
//   1. one value is drawn and discarded (the simulator draws one before anything else);
//   2. the pods, sorted by name, are shuffled;
//   3. pods drawn uniformly with replacement from the name-sorted list are appended until the
//      next draw would push the arrived GPU request (running total + the drawn pod's per-GPU
//      milli) past `inflate` x the cluster's GPU capacity; that draw is discarded;
//   4. the nodes, sorted by name, get a random order that breaks score ties;
//   5. pods are placed one by one (the same Rng goes to the policy); a pod that fits nowhere is
//      dropped, never retried; nothing departs.
// After every pod (CPU-only and failed ones too; a failed pod counts as arrived) a row records
// arrived % = arrived GPU milli / capacity (x100), allocated % = placed GPU milli / capacity,
// rounded to 0.01, and the fragmentation rate % = cluster fragment / free GPU milli under the
// trace's target workload. The value at integer level x is the mean of the rows whose arrived %
// rounds (half to even) to x, or of the rows within x +- 1 when none does, rounded to 0.01.
//
// Deterministic: the same inputs and seed give the same result on every platform.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "sched/model_set.h"
#include "sched/registry.h"
#include "sched/types.h"
#include "sched/workload.h"

namespace vgpu::sim {

// The inputs shared by every run of an experiment. Nodes and pods are sorted by name.
struct SnapshotInput {
  std::vector<sched::NodeSpec> nodes;
  std::vector<sched::PodRequest> pods;               // the original pod list, name-sorted
  std::vector<sched::WorkloadSpec> target_workload;  // typical set of `pods`
  const sched::ModelRegistry* models = nullptr;
  std::string trace_name;  // e.g. "openb_pod_list_default"
};

struct LevelValue {
  int arrived_pct = 0;
  double allocated_pct = 0;
  double frag_rate_pct = 0;
};

struct SeedResult {
  uint64_t seed = 0;
  std::vector<LevelValue> levels;  // ascending arrived_pct; levels without data are left out
  int64_t pods = 0;                // pods that arrived (original + resampled)
  int64_t failed = 0;              // pods that fit nowhere
};

// The arrival order of `input.pods` for one seed (steps 1-3) and the node tie-break order
// (step 4), drawing from `rng`.
struct ArrivalPlan {
  std::vector<sched::PodRequest> pods;
  std::vector<sched::NodeId> node_order;
};
ArrivalPlan PlanArrivals(const SnapshotInput& input, double inflate, Rng& rng);

// Runs one policy on one seed. `progress`, if not null, is advanced by the number of pods placed.
Result<SeedResult> RunSnapshot(const SnapshotInput& input, const std::string& policy,
                               const sched::PolicyArgs& args, uint64_t seed, double inflate,
                               std::atomic<int64_t>* progress = nullptr);

// Builds a SnapshotInput from loaded lists: sorts by name, computes the target workload.
SnapshotInput MakeSnapshotInput(std::vector<sched::NodeSpec> nodes,
                                std::vector<std::pair<std::string, sched::PodRequest>> pods,
                                const sched::ModelRegistry* models, std::string trace_name);

}  // namespace vgpu::sim
