// The extender's priorities: the placement policy's own scores of the feasible nodes mapped to
// kube-scheduler's 0..MaxExtenderPriority (10), comparable across the whole node list.
//
// Contract (pure functions):
// - NodeTieOrder: the order in which equal scores go to nodes (best first), as node ids (indices
//   into `names`): by a hash of the name mixed with `seed` (FNV-1a, SplitMix64's finalizer), then
//   by name. Pseudo-random like `vgpu sim`'s per-seed node order, and each node keeps its place
//   whatever other nodes come and go.
// - EngineChoice: the node the placement engine would choose among the feasible ones, as
//   sched::Scheduler::Schedule does: the highest raw score, ties to the lowest tie-break rank.
//   npos when none is feasible.
// - ExtenderPriorities: the engine's choice gets 10. Every other feasible node gets
//   floor(9 * (raw - lo) / (hi - lo)), lo and hi being the lowest and highest raw score among
//   the feasible nodes (9 when they are equal): the policy's order is kept, a node tied with
//   the choice gets 9 (it loses only the tie-break), the worst feasible node 0. Infeasible nodes
//   get 0. No grouping: nodes with GPUs of different sizes or models are on one scale, because
//   the raw scores are the policy's values for placing this pod on each node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "k8s/extender/extender_protocol.h"

namespace vgpu::k8s {

inline constexpr size_t kNoChoice = static_cast<size_t>(-1);

std::vector<uint32_t> NodeTieOrder(const std::vector<std::string>& names, uint64_t seed);

size_t EngineChoice(std::span<const int64_t> raw, std::span<const uint8_t> feasible,
                    std::span<const uint32_t> tie_rank);

std::vector<int64_t> ExtenderPriorities(std::span<const int64_t> raw,
                                        std::span<const uint8_t> feasible, size_t choice);

}  // namespace vgpu::k8s
