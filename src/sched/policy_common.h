// Small helpers shared by the policy files.
#pragma once

#include "sched/types.h"

namespace vgpu::sched {

// Normalization constants of the FGD simulator: the largest node's CPU and GPU capacity.
inline constexpr double kMaxSpecCpu = 128000.0;
inline constexpr double kMaxSpecGpu = 8000.0;
inline constexpr int64_t kMaxNodeScore = 100;

// A request with the fields that no built-in score looks at (host memory) cleared, so requests
// that differ only there share cached scores.
inline PodRequest WithoutHostMemory(PodRequest r) {
  r.memory_mib = 0;
  return r;
}

}  // namespace vgpu::sched
