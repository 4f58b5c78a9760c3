// Per-GPU facts the placement engine does not model, applied through its plugin interfaces:
// health, the number of shareable units (pods) a GPU takes, a pod's UUID allow / forbid lists,
// and the GPU's mode (gpu_inventory.h): software slices go only on "shared" GPUs, one pod on a
// "whole" GPU, "mig" and "mig-dynamic" GPUs are never given software slices (MIG instances are
// decided by mig_placement.h), and an "mps" GPU takes only pods that allow a shared fault domain
// (fails closed: with no pod in context, nothing new goes on an MPS GPU).
//
// Contract:
// - ConstraintContext is owned by the caller (PlacementState), which points `gpus` at the per-node
//   side table and `pod` at the current pod's request before each engine call, under its lock.
// - ConstraintFilter (a FilterPlugin) passes a node when at least num_gpus of its GPUs fit the
//   request (Cluster::GpuFits) and are healthy, below their unit count and allowed by UUID; for a
//   request with require_nvlink, when num_gpus of those GPUs are NVLink-connected
//   (topo/nvlink_sets.h, from GpuFacts::nvlink).
// - ConstrainedSelector wraps a policy's GpuSelector: it keeps the policy's choice when every
//   chosen GPU passes those checks and otherwise picks the best fit among the GPUs that do
//   (least free milli, then lowest index). It returns 0 (no GPUs) when too few pass.
// - Not thread-safe (the engine is not).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "k8s/wire/gpu_inventory.h"
#include "k8s/wire/pod_request.h"
#include "sched/framework.h"

namespace vgpu::k8s {

struct GpuFacts {
  std::string uuid;
  bool healthy = true;
  int units = 10;
  GpuMode mode = GpuMode::kShared;
  uint32_t nvlink = 0;  // bit j: GPU j of the node shares an NVLink with it (TopologyOfInventory)
};

struct ConstraintContext {
  const std::vector<std::vector<GpuFacts>>* gpus = nullptr;  // [engine node id][gpu index]
  const PodGpuRequest* pod = nullptr;                        // null = no UUID constraints
  sched::FitOptions fit;

  // Whether GPU i of node n may take one share of r.
  bool GpuUsable(const sched::PodRequest& r, const sched::Cluster& c, sched::NodeId n, int i) const;
  // The GPUs of node n that may take one share of r, as a mask (the first 32).
  uint32_t UsableMask(const sched::PodRequest& r, const sched::Cluster& c, sched::NodeId n) const;
  // Per GPU of node n, its NVLink peers (GpuFacts::nvlink); empty when not known.
  std::vector<uint32_t> NvlinkAdjacency(sched::NodeId n) const;
};

class ConstraintFilter final : public sched::FilterPlugin {
 public:
  explicit ConstraintFilter(const ConstraintContext* ctx) : ctx_(ctx) {}
  std::string_view Name() const override { return "vgpu-gpu-constraints"; }
  bool Filter(const sched::PodRequest& r, const sched::Cluster& c, sched::NodeId n) const override;

 private:
  const ConstraintContext* ctx_;
};

class ConstrainedSelector final : public sched::GpuSelector {
 public:
  ConstrainedSelector(std::unique_ptr<sched::GpuSelector> inner, const ConstraintContext* ctx)
      : inner_(std::move(inner)), ctx_(ctx) {}
  std::string_view Name() const override { return inner_->Name(); }
  sched::GpuSet SelectGpus(const sched::PodRequest& r, const sched::Cluster& c, sched::NodeId n,
                           Rng& rng) override;

 private:
  std::unique_ptr<sched::GpuSelector> inner_;
  const ConstraintContext* ctx_;
};

}  // namespace vgpu::k8s
