// The baselines vgpu's GPU set choice is measured against, ported from their published sources
// (docs/topology.md): go-gpuallocator's `besteffort` policy (NVIDIA's device plugin), HAMi's
// greedy subset choice under its `topology-aware` policy, and lowest-index-first (`simple`).
//
// besteffort, as in go-gpuallocator (gpuallocator/besteffort_policy.go):
// - pair score: the sum over the links it records between two GPUs: the PCIe level (SYS 10,
//   NODE 20, PHB 30, PXB 40, PIX 50, same board 60) plus 100 per NVLink whose remote PCI device
//   is the peer GPU. Links through NVSwitch have the switch as their remote device, so besteffort
//   does not see them (its own TODO: "Handle NVSwitch semantics").
// - search: pad the available list with empty slots to a multiple of `size`, enumerate every
//   partition into sets of `size` (first element of each set in increasing position, sets with
//   either no padding or all of it), keep the first partition with the highest summed set score
//   among those with a padding-free set holding every required GPU, and return that partition's
//   first highest-scoring set holding the required GPUs. Size 1 returns the first available GPU
//   (holding the required one). Empty result: size <= 0, fewer available than size, more
//   required than size, or no set holds the required GPUs.
// HAMi (pkg/device/nvidia, scheduler `topology-aware`): the same pair table with NVSwitch links
// counted (the smaller link count of the two GPUs); size 1: the available GPU with the lowest
// score sum to the other available GPUs; size k: the k-subset with the highest pair-score sum.
// Ties go to the first in enumeration order everywhere, as in the sources.
#pragma once

#include <functional>
#include <vector>

#include "topo/topology.h"

namespace vgpu::topo {

int BestEffortPairScore(const PairLink& link);
int HamiPairScore(const PairLink& link);

// Every k-subset of `devices` in lexicographic order of positions (go-gpuallocator's
// iterateGPUSets). Entries of -1 are padding.
void IterateSets(const std::vector<int>& devices, int size,
                 const std::function<void(const std::vector<int>&)>& callback);
// Every partition as besteffort enumerates it (iterateGPUPartitions), padding as -1.
void IteratePartitions(const std::vector<int>& devices, int size,
                       const std::function<void(const std::vector<std::vector<int>>&)>& callback);

std::vector<int> BestEffortAllocate(const Topology& topology, const std::vector<int>& available,
                                    const std::vector<int>& required, int size);
std::vector<int> HamiAllocate(const Topology& topology, const std::vector<int>& available,
                              int size);
std::vector<int> LowestIndexAllocate(const std::vector<int>& available, int size);

}  // namespace vgpu::topo
