#include "sched/joint_frag.h"

#include <algorithm>
#include <map>
#include <utility>

namespace vgpu::sched {
namespace {

// w_cpu * U * (1 - fed / slots) when the CPU feeds fewer pods than the GPUs could take.
double CpuShortfall(double cpu_weight, int64_t cpu_free, int64_t cpu, int64_t slots,
                    double usable_free) {
  if (cpu_weight == 0 || cpu <= 0 || slots <= 0) return 0;
  const int64_t fed = cpu_free / cpu;
  if (fed >= slots) return 0;
  return cpu_weight * usable_free * (1.0 - static_cast<double>(fed) / static_cast<double>(slots));
}

}  // namespace

double SpecJointFrag(const WorkloadSpec& m, double cpu_weight, int64_t cpu_free,
                     std::span<const int32_t> gpu_free, std::span<const ModelId> gpu_models) {
  int64_t total = 0;
  for (int32_t f : gpu_free) total += f;
  if (m.num_gpus == 0 || m.gpu_milli == 0 || cpu_free < m.cpu_milli) {
    return static_cast<double>(total);
  }
  int usable = 0;
  int64_t share_slots = 0;
  int64_t unusable_free = 0;
  for (size_t i = 0; i < gpu_free.size(); ++i) {
    if (m.models.Allows(gpu_models[i]) && gpu_free[i] >= m.gpu_milli) {
      ++usable;
      share_slots += gpu_free[i] / m.gpu_milli;
    } else {
      unusable_free += gpu_free[i];
    }
  }
  if (usable < m.num_gpus) return static_cast<double>(total);
  const int64_t slots = m.num_gpus == 1 ? share_slots : usable / m.num_gpus;
  return static_cast<double>(unusable_free) +
         CpuShortfall(cpu_weight, cpu_free, m.cpu_milli, slots,
                      static_cast<double>(total - unusable_free));
}

JointFragModel::JointFragModel(std::span<const WorkloadSpec> workload, double cpu_weight,
                               bool cpu_mix, double mem_per_milli)
    : workload_(workload.begin(), workload.end()),
      cpu_weight_(cpu_weight),
      cpu_mix_(cpu_mix),
      mem_per_milli_(mem_per_milli) {
  double cpu_sum = 0, gpu_sum = 0;
  for (const WorkloadSpec& m : workload_) {
    if (m.num_gpus == 0 || m.gpu_milli == 0) continue;
    cpu_sum += m.weight * static_cast<double>(m.cpu_milli);
    gpu_sum += m.weight * m.num_gpus * m.gpu_milli;
  }
  cpu_per_milli_ = gpu_sum > 0 ? cpu_sum / gpu_sum : 0;
  std::map<std::pair<int32_t, uint64_t>, std::map<int32_t, Group>> grouped;
  for (const WorkloadSpec& m : workload_) {
    if (m.num_gpus == 0 || m.gpu_milli == 0) {
      cpu_only_weight_ += m.weight;
      continue;
    }
    Group& g = grouped[{m.gpu_milli, m.models.bits()}][m.num_gpus];
    g.num_gpus = m.num_gpus;
    g.cpu.push_back(m.cpu_milli);
    g.weight.push_back(m.weight);
  }
  for (auto& [key, by_num] : grouped) {
    Probe p;
    p.gpu_milli = key.first;
    p.models = ModelSet::FromBits(key.second);
    for (auto& [num, g] : by_num) p.groups.push_back(std::move(g));
    probes_.push_back(std::move(p));
  }
}

double JointFragModel::NodeFrag(int64_t cpu_free, std::span<const int32_t> gpu_free,
                                std::span<const ModelId> gpu_models, int64_t mem_free) const {
  int64_t total = 0;
  for (int32_t f : gpu_free) total += f;
  if (total == 0) return 0;
  const double all = static_cast<double>(total);
  double frag = cpu_only_weight_ * all;
  const double spec_cpu_weight = cpu_mix_ ? 0.0 : cpu_weight_;
  if (cpu_mix_ && cpu_per_milli_ > 0) {
    double fed = static_cast<double>(cpu_free) / cpu_per_milli_;
    if (mem_per_milli_ > 0) fed = std::min(fed, static_cast<double>(mem_free) / mem_per_milli_);
    frag += cpu_weight_ * (1.0 - cpu_only_weight_) * std::max(0.0, all - fed);
  }
  const size_t n = gpu_free.size();
  for (const Probe& p : probes_) {
    int usable = 0;
    int64_t share_slots = 0;
    int64_t unusable_free = 0;
    for (size_t i = 0; i < n; ++i) {
      if (gpu_free[i] >= p.gpu_milli && p.models.Allows(gpu_models[i])) {
        ++usable;
        share_slots += gpu_free[i] / p.gpu_milli;
      } else {
        unusable_free += gpu_free[i];
      }
    }
    const double partial = static_cast<double>(unusable_free);
    const double usable_free = all - partial;
    for (const Group& g : p.groups) {
      const size_t specs = g.cpu.size();
      if (usable < g.num_gpus) {
        for (size_t s = 0; s < specs; ++s) frag += g.weight[s] * all;
        continue;
      }
      const int64_t slots = g.num_gpus == 1 ? share_slots : usable / g.num_gpus;
      for (size_t s = 0; s < specs; ++s) {
        if (cpu_free < g.cpu[s]) {
          frag += g.weight[s] * all;
        } else {
          frag += g.weight[s] *
                  (partial + CpuShortfall(spec_cpu_weight, cpu_free, g.cpu[s], slots, usable_free));
        }
      }
    }
  }
  return frag;
}

double JointFragModel::NodeFrag(const Cluster& c, NodeId n) const {
  int32_t free[kMaxGpusPerNode];
  ModelId models[kMaxGpusPerNode];
  const auto gpus = c.gpus(n);
  for (size_t i = 0; i < gpus.size(); ++i) {
    free[i] = gpus[i].free_milli;
    models[i] = gpus[i].model;
  }
  return NodeFrag(c.cpu_free(n), {free, gpus.size()}, {models, gpus.size()}, c.memory_free(n));
}

}  // namespace vgpu::sched
