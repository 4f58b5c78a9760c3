// vgpu's GPU set choice for a k-GPU request on one node (docs/topology.md).
//
// Objective, in order:
//   1. the job's predicted communication: for all-reduce the ring-bottleneck bus bandwidth of
//      the set (higher is better), for other patterns the predicted seconds per step with the
//      best rank order (lower is better);
//   2. among near ties (within `tie_tolerance` of the best, relative), the sets that leave the
//      node best connected for the next requests: the sum over sizes s in {2, 4, 8} (s no larger
//      than what stays free) of the best bus bandwidth any s-subset of the remaining GPUs offers,
//      each relative to the best an s-subset of the whole node offers;
//   3. fewer NUMA nodes spanned; then the lowest GPU indices.
// On nodes of more than 8 GPUs, (2) looks at the kLookaheadSets near ties that span the fewest
// NUMA nodes (lowest indices first), and only at the sizes with at most kLookaheadSubsets subsets
// of the remaining GPUs. The beam search breaks ties by NUMA span, then indices.
// For k = 1 every GPU ties on (1), so (2) keeps the well-connected GPUs free.
// Search: every k-subset of the free GPUs when there are at most kExactSets of them (all nodes
// of up to 8 GPUs; 16 GPUs for k <= 3 or k >= 13); otherwise a beam search (width kBeamWidth)
// that grows sets one GPU at a time by their slowest pair, then their summed pair bandwidth, and
// evaluates the final candidates exactly. Rank order for patterns other than all-reduce: every
// permutation for k <= 8 (exact), else the ring order. For all-reduce the order is a best ring
// (NCCL reorders anyway).
#pragma once

#include <vector>

#include "topo/bandwidth.h"
#include "topo/pattern.h"

namespace vgpu::topo {

inline constexpr int kExactSets = 2000;
inline constexpr int kBeamWidth = 48;
inline constexpr int kLookaheadSets = 8;
inline constexpr int kLookaheadSubsets = 300;

struct ChooseOptions {
  double tie_tolerance = 1e-9;  // relative; 0.05 would treat sets within 5% as ties
  bool lookahead = true;        // objective (2); false: (1) then (3) only
  // When every pair of free GPUs has the same bandwidth (an NVSwitch board), every set ties on
  // (1) and on (2), so the choice is decided by (3) alone: the search is skipped. The answer is
  // the same as without the shortcut (choose_test checks it on every free mask).
  bool uniform_shortcut = true;
  // Only NVLink-connected sets (topo/nvlink_sets.h) count; none: the choice is empty. For
  // `vgpu.io/topology: require-nvlink` pods (k >= 2).
  bool require_nvlink = false;
};

struct SetChoice {
  std::vector<int> gpus;          // in rank order: rank i runs on gpus[i] (visible-device order)
  double bus_bandwidth_gbps = 0;  // ring bottleneck of the set
  double comm_seconds = 0;        // pattern's predicted seconds per step
  bool exact = true;              // exhaustive search (false: beam search)
};

// Chooses `k` GPUs among `free` (a mask of the node's free GPUs). Empty gpus when fewer than k
// are free or k < 1, or, with require_nvlink, when no k of them are NVLink-connected.
SetChoice ChooseSet(Evaluator& evaluator, GpuMask free, int k, const CommPattern& pattern = {},
                    const ChooseOptions& options = {});

// The best ring-bottleneck bandwidth any k-subset of `free` offers (exact; beam for large
// searches, as ChooseSet). 0 when fewer than 2.
double BestBusBandwidth(Evaluator& evaluator, GpuMask free, int k);

// The best rank order of `gpus` for `pattern` (every permutation for up to 8 GPUs) and its time.
std::vector<int> BestRankOrder(Evaluator& evaluator, const CommPattern& pattern,
                               const std::vector<int>& gpus, double* seconds);

}  // namespace vgpu::topo
