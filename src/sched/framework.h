// The plugin framework of the placement engine, shaped like the Kubernetes scheduler framework:
// one small interface per extension point, assembled into a Policy.
//
//   Observe   : sees each arriving pod once (online workload learning).
//   Filter    : may the pod go on this node?            (all filters must pass)
//   PreScore  : once per decision, with the feasible nodes (e.g. a random pick).
//   Score     : how good is this node? higher wins; ties go to the node that comes first in the
//               caller's node order. NormalizeScores maps raw scores to 0..100 for callers that
//               combine scores (a Kubernetes extender); it never changes which node is best.
//   SelectGpus: which GPUs of the chosen node.
//   Reserve / Unreserve: told when a placement is committed or released.
//
// Contract for plugins: pure logic, deterministic; randomness only from the Rng passed in; no I/O,
// no threads, no clock. A score is a function of (request, node state, Epoch()) when Cacheable()
// is true, so the Scheduler may reuse it until the node's version or the epoch changes.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/rng.h"
#include "sched/cluster.h"
#include "sched/types.h"

namespace vgpu::sched {

class ObservePlugin {
 public:
  virtual ~ObservePlugin() = default;
  virtual void Observe(const PodRequest& r) = 0;
};

class FilterPlugin {
 public:
  virtual ~FilterPlugin() = default;
  virtual std::string_view Name() const = 0;
  virtual bool Filter(const PodRequest& r, const Cluster& c, NodeId n) const = 0;
};

class ScorePlugin {
 public:
  virtual ~ScorePlugin() = default;
  virtual std::string_view Name() const = 0;
  virtual void PreScore(const PodRequest& /*r*/, const Cluster& /*c*/,
                        std::span<const NodeId> /*feasible*/, Rng& /*rng*/) {}
  virtual int64_t Score(const PodRequest& r, const Cluster& c, NodeId n) = 0;
  // Whether Score depends only on (ScoreKey(request), node state, Epoch()).
  virtual bool Cacheable() const { return true; }
  // Changes whenever the plugin's own model changes (e.g. a re-learned workload).
  virtual uint64_t Epoch() const { return 0; }
  // The part of the request the score depends on; requests with equal keys share cached scores.
  virtual PodRequest ScoreKey(const PodRequest& r) const { return r; }
  // Default: min-max to 0..100 (all equal -> 0), as the FGD simulator's plugins do.
  virtual void NormalizeScores(std::span<int64_t> scores) const;
};

class GpuSelector {
 public:
  virtual ~GpuSelector() = default;
  virtual std::string_view Name() const = 0;
  // Chooses r.num_gpus GPUs of node n. REQUIRES: the cluster's Fits(r, n) holds.
  virtual GpuSet SelectGpus(const PodRequest& r, const Cluster& c, NodeId n, Rng& rng) = 0;
};

class ReservePlugin {
 public:
  virtual ~ReservePlugin() = default;
  virtual void Reserve(const PodRequest& r, const Cluster& c, const Placement& p) = 0;
  virtual void Unreserve(const PodRequest& r, const Cluster& c, const Placement& p) = 0;
};

// A named placement policy: the plugins the Scheduler runs, in order. Owns its plugins.
struct Policy {
  std::string name;
  FitOptions fit;  // options of the built-in resource filter (always runs first)
  std::vector<std::unique_ptr<FilterPlugin>> filters;  // extra filters
  std::unique_ptr<ScorePlugin> score;                  // required
  std::unique_ptr<GpuSelector> gpus;                   // required
  std::vector<std::unique_ptr<ObservePlugin>> observers;
  std::vector<std::unique_ptr<ReservePlugin>> reservers;
  // Plugins shared by several extension points (e.g. FGD's state) are kept alive here.
  std::vector<std::shared_ptr<void>> keep_alive;
};

}  // namespace vgpu::sched
