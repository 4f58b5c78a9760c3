// GpuScratch: a copy of the free milli and models of one node's GPUs, changed in place while a
// score tries its placements on the node (FGD, CA-FGD), and the test that lets it skip a GPU that
// would score as an earlier one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "sched/cluster.h"

namespace vgpu::sched {

struct GpuScratch {
  explicit GpuScratch(std::span<const GpuState> gpus) : state(gpus), count(gpus.size()) {
    for (size_t i = 0; i < count; ++i) {
      free[i] = gpus[i].free_milli;
      models[i] = gpus[i].model;
    }
  }

  std::span<const int32_t> free_milli() const { return {free, count}; }
  std::span<const ModelId> model_ids() const { return {models, count}; }

  // True when a GPU before `i` has i's free milli and model and fits `r`: i scores as it does.
  bool LikeAnEarlierFit(const PodRequest& r, size_t i) const {
    for (size_t j = 0; j < i; ++j) {
      if (free[j] == free[i] && models[j] == models[i] &&
          Cluster::GpuFits(r, state[j], FitOptions{})) {
        return true;
      }
    }
    return false;
  }

  std::span<const GpuState> state;  // the node's GPUs as they are
  size_t count;
  int32_t free[kMaxGpusPerNode];
  ModelId models[kMaxGpusPerNode];
};

}  // namespace vgpu::sched
