#include "sched/hami_score.h"

#include <algorithm>

namespace vgpu::sched {

GpuSet SelectHamiGpus(const PodRequest& r, const Cluster& c, NodeId n, int split, bool binpack) {
  const auto gpus = c.gpus(n);
  FitOptions fit;
  fit.max_pods_per_gpu = split;
  int idx[kMaxGpusPerNode];
  double score[kMaxGpusPerNode];
  int count = 0;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (!Cluster::GpuFits(r, gpus[i], fit)) continue;
    score[i] = HamiDeviceScore(r, gpus[i], split);
    idx[count++] = static_cast<int>(i);
  }
  std::stable_sort(idx, idx + count, [&](int a, int b) {
    return binpack ? score[a] > score[b] : score[a] < score[b];
  });
  GpuSet set = 0;
  for (int k = 0; k < count && k < r.num_gpus; ++k) set |= GpuSet{1} << idx[k];
  return set;
}

}  // namespace vgpu::sched
