// TraceReplay: the snapshot experiment of `vgpu sim` (one seed: its pod sequence, in its order)
// replayed through a scheduler extender over HTTP as kube-scheduler would drive it, so the
// extender's production path can be measured against the simulator on the same pods and nodes.
//
// - Nodes become Node objects in the tests' API server: the trace's CPU, memory and GPUs (the
//   vgpu.io/gpu-inventory annotation, `units_per_gpu` units each; a GPU of unknown memory gets
//   `unknown_gpu_memory_mib`), status.allocatable with <prefix>/gpu = the units.
// - Each pod becomes a Pod in HAMi's resource names, created in the API server when it arrives:
//   CPU and memory requests; a whole-GPU pod <prefix>/gpu: n; a sharing pod <prefix>/gpu: n,
//   gpucores and gpumem-percentage = its share; a pod limited to GPU models the
//   <prefix>/use-gputype annotation. CPU-only pods too.
// - Per pod, kube-scheduler's steps (kube_scheduler_emulator.h): NodeResourcesFit, the
//   extender's filter over the nodes that pass (nodeCacheCapable: node names), prioritize when
//   more than one node is left, selectHost, kube-scheduler's assume, then the extender's bind.
//   A pod no node takes is deleted (the simulator drops it); so is one whose bind fails (counted).
// - The unallocated GPU % at an arrived level is computed as `vgpu sim` does (snapshot.h): the
//   mean over the rows (one after every pod) whose arrived % rounds to the level.
// RunReference runs the same pods through the placement engine in-process, with the nodes as the
// extender's engine holds them and the extender's tie-break order: what the extender should
// decide, pod by pod.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "fake_api_server.h"
#include "kube_scheduler_emulator.h"
#include "sched/registry.h"
#include "sim/snapshot.h"

namespace vgpu::k8s::testing {

struct ReplaySetup {
  std::vector<sched::NodeSpec> nodes;  // as in sim::SnapshotInput (name-sorted)
  const sched::ModelRegistry* models = nullptr;
  sim::ArrivalPlan plan;  // the pods in arrival order and the simulator's node order
  int units_per_gpu = 100;
  int64_t unknown_gpu_memory_mib = 16384;
  std::string prefix = "nvidia.com";
};

Json ReplayNodeObject(const ReplaySetup& setup, size_t node);
Json ReplayPodObject(const ReplaySetup& setup, size_t pod);
// Puts every node into `api` (before the extender starts).
void LoadReplayNodes(const ReplaySetup& setup, FakeApiServer* api);

// The simulator's per-level bookkeeping (sim/snapshot.cc): one row after every pod.
class LevelTally {
 public:
  explicit LevelTally(int64_t capacity_milli) : capacity_(capacity_milli) {}
  // The arrived level the next row lands in (rounded half to even, as the simulator does).
  int LevelOf(int64_t arrived_milli) const;
  void Row(int64_t arrived_milli, int64_t allocated_milli);
  // 100 - the mean allocated % at `level` (rows within level +- 1 when none is at it), rounded
  // to 0.01; -1 when no row is near.
  double Unallocated(int level) const;

 private:
  int64_t capacity_;
  std::map<int, std::pair<double, int64_t>> sums_;  // level -> (sum of allocated %, rows)
};

struct ReplayOptions {
  KubeSchedulerEmulator::Options kube;
  int last_level = 100;  // stop once a pod arrives beyond this level
  size_t max_pods = 0;   // 0 = no other limit
};

struct ReplayResult {
  std::vector<std::string> chosen;  // per pod replayed: its node, "" = not placed
  double unallocated = -1;          // at options.last_level
  int64_t pods = 0, placed = 0, failed = 0, cpu_only = 0, bind_errors = 0;
  int64_t prioritized = 0;  // pods for which prioritize was asked (more than one node left)
  double seconds = 0;
  std::vector<double> filter_ms, bind_ms;  // per call
};

// Replays against the extender on 127.0.0.1:`port`, whose API server is `api`.
Result<ReplayResult> RunReplay(const ReplaySetup& setup, FakeApiServer* api, int port,
                               const ReplayOptions& options);

struct ReferenceResult {
  std::vector<std::string> chosen;
  double unallocated = -1;
};
// The engine in-process: nodes as the extender builds them (name order, GPU memory as
// published), ties to NodeTieOrder(names, tie_seed).
Result<ReferenceResult> RunReference(const ReplaySetup& setup, const std::string& policy,
                                     const sched::PolicyArgs& args, uint64_t tie_seed,
                                     int last_level, size_t max_pods = 0);

}  // namespace vgpu::k8s::testing
