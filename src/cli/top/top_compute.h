// What `vgpu top` shows about compute sharing: the per-GPU arbiters (shm/arbiter.h) in the
// registry's arbiter directory, read-only, and each slice's configured and achieved share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shm/arbiter.h"

namespace vgpu::cli {

struct ComputeSliceView {
  uint64_t key = 0;
  std::string name;
  shm::ArbiterSliceConfig config{};
  int members = 0;
  int waiters = 0;
  double achieved_pct = 0;  // device time charged over the last second
  uint64_t used_ns = 0;
  uint64_t kernels = 0;
  uint64_t held_ns = 0;
  uint64_t turns = 0;
  uint64_t preempted = 0;
};

struct ArbiterView {
  std::string path;
  std::string uuid;
  std::string error;  // why it could not be read ("" if it could)
  std::string owner;  // name of the slice holding the turn ("" if none)
  uint64_t turns = 0;
  uint64_t preemptions = 0;
  std::vector<ComputeSliceView> slices;
};

// Reads every <dir>/*.arbiter; never modifies anything.
std::vector<ArbiterView> ReadArbiters(const std::string& dir);

// The compute record of the slice whose region is `region_path` on the GPU `uuid` ("" matches
// any GPU), or nullptr.
const ComputeSliceView* FindComputeSlice(const std::vector<ArbiterView>& arbiters,
                                         const std::string& region_path, const std::string& uuid);

// "max 30% guarantee 30% capped, weight 1, normal, slice 5ms"
std::string ComputePolicyText(const shm::ArbiterSliceConfig& config);

}  // namespace vgpu::cli
