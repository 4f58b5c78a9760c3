// Cluster: a snapshot of nodes and GPUs with their free resources, and the pods reserved on them.
//
// Contract:
// - Nodes are added once (AddNode) and never removed; NodeIds are dense, 0..num_nodes()-1, in the
//   order added. Names must be unique.
// - Reserve() puts a pod on a node and GPUs; it checks every resource first and changes nothing
//   when any would be over-allocated (kResourceExhausted), when the placement is malformed
//   (kInvalidArgument) or when the pod key is already reserved (kAlreadyExists). Free CPU,
//   memory, GPU milli and GPU memory can therefore never go negative.
// - Unreserve() releases a pod's resources; it is idempotent (false when the key is unknown).
// - Every change to a node bumps its version(); caches key on (node, version). Every change to
//   the cluster (a node added, a reservation made or released) gives it a new stamp(), unique
//   in the process across all clusters, so a cache of a whole-cluster figure keys on it alone.
// - GPU memory: a pod that states gpu_memory_mib is charged that much on each of its GPUs and needs
//   a GPU whose memory is known and free. A pod that states none is charged memory in proportion
//   to its compute share (capacity * gpu_milli / 1000, rounded down), so it never blocks on memory
//   more than on compute; GPUs of unknown memory (0) are not tracked.
// - Feasibility (Fits) is kube-scheduler's NodeResourcesFit plus the GPU-share filter of the FGD
//   simulator: CPU and memory fit, and at least num_gpus distinct GPUs each of an allowed model
//   with gpu_milli free (and GPU memory, and a free slot when FitOptions limits pods per GPU).
// - Not thread-safe; const methods may run concurrently with each other.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "sched/types.h"

namespace vgpu::sched {

struct GpuState {
  int32_t free_milli = kGpuMilli;
  int32_t pods = 0;  // pods using this GPU
  int64_t memory_capacity_mib = 0;
  int64_t memory_free_mib = 0;
  ModelId model = 0;
};

struct FitOptions {
  int max_pods_per_gpu = 0;  // 0 = no limit (HAMi's split count is 10)
};

class Cluster {
 public:
  Cluster() = default;

  // Adds a node with all resources free. Errors: duplicate or empty name, negative capacity,
  // more than kMaxGpusPerNode GPUs.
  Result<NodeId> AddNode(const NodeSpec& spec);

  size_t num_nodes() const { return nodes_.size(); }
  const std::string& name(NodeId n) const { return names_[n]; }
  std::optional<NodeId> FindNode(std::string_view name) const;

  int64_t cpu_capacity(NodeId n) const { return nodes_[n].cpu_capacity; }
  int64_t cpu_free(NodeId n) const { return nodes_[n].cpu_free; }
  int64_t memory_capacity(NodeId n) const { return nodes_[n].memory_capacity; }
  int64_t memory_free(NodeId n) const { return nodes_[n].memory_free; }
  int num_gpus(NodeId n) const { return nodes_[n].gpu_count; }
  std::span<const GpuState> gpus(NodeId n) const {
    return {gpus_.data() + nodes_[n].gpu_begin, static_cast<size_t>(nodes_[n].gpu_count)};
  }
  // Sum of free milli over the node's GPUs.
  int64_t gpu_free_milli(NodeId n) const { return nodes_[n].gpu_free_milli; }
  int full_free_gpus(NodeId n) const { return nodes_[n].full_free_gpus; }
  // Models present on the node (bitmask over ModelIds).
  uint64_t model_bits(NodeId n) const { return nodes_[n].model_bits; }
  uint32_t version(NodeId n) const { return nodes_[n].version; }
  uint64_t stamp() const { return stamp_; }

  // Number of GPU pods of class `cls` (GpuClassOf, >= 0) on the node, and of distinct GPU classes
  // present (CPU-only pods are not counted).
  int PodsOfClass(NodeId n, int cls) const;
  int NumClasses(NodeId n) const { return static_cast<int>(classes_[n].size()); }

  // Cluster totals, in milli.
  int64_t total_gpu_milli() const { return total_gpu_milli_; }
  int64_t allocated_gpu_milli() const { return allocated_gpu_milli_; }

  // GPU memory that `r` is charged on GPU `g` of node `n` (see the contract above).
  static int64_t ChargedGpuMemory(const PodRequest& r, const GpuState& g);
  // Whether GPU `g` can take one share of `r` (model, milli, memory, slot).
  static bool GpuFits(const PodRequest& r, const GpuState& g, const FitOptions& opt) {
    if (!r.models.Allows(g.model) || g.free_milli < r.gpu_milli) return false;
    if (opt.max_pods_per_gpu > 0 && g.pods >= opt.max_pods_per_gpu) return false;
    if (r.gpu_memory_mib > 0) {
      return g.memory_capacity_mib > 0 && g.memory_free_mib >= r.gpu_memory_mib;
    }
    return true;  // proportional memory never exceeds what the free milli implies
  }
  int CountFittingGpus(const PodRequest& r, NodeId n, const FitOptions& opt) const;
  // CPU and memory fit.
  bool FitsHost(const PodRequest& r, NodeId n) const {
    const NodeState& s = nodes_[n];
    return s.cpu_free >= r.cpu_milli && s.memory_free >= r.memory_mib;
  }
  // CPU, memory and GPUs fit.
  bool Fits(const PodRequest& r, NodeId n, const FitOptions& opt = {}) const {
    if (!FitsHost(r, n)) return false;
    if (r.num_gpus == 0) return true;
    const NodeState& s = nodes_[n];
    if (s.gpu_count < r.num_gpus || s.max_gpu_free < r.gpu_milli) return false;
    if (r.models.IsAny() && r.gpu_memory_mib == 0 && opt.max_pods_per_gpu == 0) {
      // Only free milli matters: answer from the node's summary.
      if (r.gpu_milli == kGpuMilli) return s.full_free_gpus >= r.num_gpus;
      if (r.num_gpus == 1) return true;  // the GPU with max_gpu_free fits
    } else if (!r.models.IsAny() && (r.models.bits() & s.model_bits) == 0) {
      return false;
    }
    return HasFittingGpus(r, n, opt, r.num_gpus);
  }
  // Whether at least `need` GPUs of node n fit one share of r each (stops early).
  bool HasFittingGpus(const PodRequest& r, NodeId n, const FitOptions& opt, int need) const {
    for (const GpuState& g : gpus(n)) {
      if (GpuFits(r, g, opt) && --need <= 0) return true;
    }
    return need <= 0;
  }

  struct Reservation {
    PodRequest request;
    Placement placement;
  };
  Status Reserve(PodKey key, const PodRequest& r, const Placement& p, const FitOptions& opt = {});
  bool Unreserve(PodKey key);
  const Reservation* FindReservation(PodKey key) const;
  size_t num_reservations() const { return reservations_.size(); }

 private:
  struct NodeState {
    int64_t cpu_capacity = 0;
    int64_t cpu_free = 0;
    int64_t memory_capacity = 0;
    int64_t memory_free = 0;
    int64_t gpu_free_milli = 0;
    uint64_t model_bits = 0;
    uint32_t gpu_begin = 0;
    uint32_t version = 1;
    int32_t gpu_count = 0;
    int32_t full_free_gpus = 0;
    int32_t max_gpu_free = 0;  // most free milli on one GPU
  };
  void UpdateMaxFree(NodeState& s);
  void AddClass(NodeId n, int cls, int delta);

  std::vector<NodeState> nodes_;
  std::vector<std::string> names_;
  std::vector<GpuState> gpus_;
  std::vector<std::vector<std::pair<int, int>>> classes_;  // (class, count > 0) per node
  std::unordered_map<std::string, NodeId> by_name_;
  std::unordered_map<PodKey, Reservation> reservations_;
  int64_t total_gpu_milli_ = 0;
  int64_t allocated_gpu_milli_ = 0;
  uint64_t stamp_ = NextStamp();
  static uint64_t NextStamp();
};

}  // namespace vgpu::sched
