#include "sched/frag.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace vgpu::sched {

double SpecFrag(const WorkloadSpec& m, int64_t cpu_free, std::span<const int32_t> gpu_free,
                std::span<const ModelId> gpu_models) {
  int64_t total = 0;
  for (int32_t f : gpu_free) total += f;
  if (m.num_gpus == 0 || m.gpu_milli == 0 || cpu_free < m.cpu_milli) {
    return static_cast<double>(total);
  }
  int usable = 0;
  int64_t unusable_free = 0;
  for (size_t i = 0; i < gpu_free.size(); ++i) {
    if (m.models.Allows(gpu_models[i]) && gpu_free[i] >= m.gpu_milli) {
      ++usable;
    } else {
      unusable_free += gpu_free[i];
    }
  }
  return static_cast<double>(usable < m.num_gpus ? total : unusable_free);
}

FragModel::FragModel(std::span<const WorkloadSpec> workload)
    : workload_(workload.begin(), workload.end()) {
  // (gpu_milli, models) -> num_gpus -> [(cpu, weight)]
  std::map<std::pair<int32_t, uint64_t>, std::map<int32_t, std::vector<std::pair<int64_t, double>>>>
      grouped;
  for (const WorkloadSpec& m : workload_) {
    if (m.num_gpus == 0 || m.gpu_milli == 0) {
      cpu_only_weight_ += m.weight;
      continue;
    }
    grouped[{m.gpu_milli, m.models.bits()}][m.num_gpus].emplace_back(m.cpu_milli, m.weight);
  }
  for (auto& [probe_key, by_num] : grouped) {
    Probe p;
    p.gpu_milli = probe_key.first;
    p.models = ModelSet::FromBits(probe_key.second);
    for (auto& [num, entries] : by_num) {
      std::sort(entries.begin(), entries.end());
      Group g;
      g.num_gpus = num;
      g.ok_weight.push_back(0);
      for (const auto& [cpu, w] : entries) {
        g.cpu.push_back(cpu);
        g.weight += w;
        g.ok_weight.push_back(g.weight);
      }
      p.groups.push_back(std::move(g));
    }
    probes_.push_back(std::move(p));
  }
}

double FragModel::NodeFrag(int64_t cpu_free, std::span<const int32_t> gpu_free,
                           std::span<const ModelId> gpu_models) const {
  int64_t total = 0;
  for (int32_t f : gpu_free) total += f;
  if (total == 0) return 0;
  const double all = static_cast<double>(total);
  double frag = cpu_only_weight_ * all;
  const size_t n = gpu_free.size();
  for (const Probe& p : probes_) {
    int usable = 0;
    int64_t unusable_free = 0;
    for (size_t i = 0; i < n; ++i) {
      if (gpu_free[i] >= p.gpu_milli && p.models.Allows(gpu_models[i])) {
        ++usable;
      } else {
        unusable_free += gpu_free[i];
      }
    }
    const double partial = static_cast<double>(unusable_free);
    for (const Group& g : p.groups) {
      if (usable < g.num_gpus) {
        frag += g.weight * all;
        continue;
      }
      // Specs whose CPU fits see only the unusable GPUs as fragment; the others see all.
      const size_t k = static_cast<size_t>(std::upper_bound(g.cpu.begin(), g.cpu.end(), cpu_free) -
                                           g.cpu.begin());
      const double ok = g.ok_weight[k];
      frag += ok * partial + (g.weight - ok) * all;
    }
  }
  return frag;
}

double FragModel::NodeFrag(const Cluster& c, NodeId n) const {
  int32_t free[kMaxGpusPerNode];
  ModelId models[kMaxGpusPerNode];
  const auto gpus = c.gpus(n);
  for (size_t i = 0; i < gpus.size(); ++i) {
    free[i] = gpus[i].free_milli;
    models[i] = gpus[i].model;
  }
  return NodeFrag(c.cpu_free(n), {free, gpus.size()}, {models, gpus.size()});
}

}  // namespace vgpu::sched
