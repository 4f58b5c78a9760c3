#include "kube_scheduler_emulator.h"

#include <algorithm>
#include <cmath>

namespace vgpu::k8s::testing {
namespace {

constexpr int64_t kMaxNodeScore = 100;
constexpr int64_t kMaxExtenderPriority = 10;
// The requests kube-scheduler's scoring assumes for a container that states none
// (schedutil.DefaultMilliCPURequest / DefaultMemoryRequest).
constexpr int64_t kDefaultCpuMilli = 100;
constexpr int64_t kDefaultMemoryMib = 200;

}  // namespace

KubeSchedulerEmulator::KubeSchedulerEmulator(std::vector<EmulatedNode> nodes, Options options)
    : nodes_(std::move(nodes)),
      requested_(nodes_.size()),
      pod_count_(nodes_.size(), 0),
      options_(options),
      rng_(options.seed) {}

std::vector<size_t> KubeSchedulerEmulator::Feasible(const EmulatedPod& pod) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const EmulatedNode& n = nodes_[i];
    const EmulatedPod& used = requested_[i];
    if (pod_count_[i] + 1 > n.pods) continue;
    if (pod.cpu_milli > n.cpu_milli - used.cpu_milli) continue;
    if (pod.memory_mib > n.memory_mib - used.memory_mib) continue;
    if (pod.gpu_units > n.gpu_units - used.gpu_units) continue;
    out.push_back(i);
  }
  return out;
}

int64_t KubeSchedulerEmulator::DefaultScore(size_t node, const EmulatedPod& pod) const {
  const EmulatedNode& n = nodes_[node];
  const EmulatedPod& used = requested_[node];
  // Scoring counts a request of 0 as the default request.
  const int64_t cpu = used.cpu_milli + (pod.cpu_milli > 0 ? pod.cpu_milli : kDefaultCpuMilli);
  const int64_t mem = used.memory_mib + (pod.memory_mib > 0 ? pod.memory_mib : kDefaultMemoryMib);
  // LeastAllocated: ((allocatable - requested) * 100 / allocatable) per resource, weights 1.
  const auto least = [](int64_t req, int64_t alloc) -> int64_t {
    if (alloc == 0 || req > alloc) return 0;
    return (alloc - req) * kMaxNodeScore / alloc;
  };
  const int64_t least_allocated = (least(cpu, n.cpu_milli) + least(mem, n.memory_mib)) / 2;
  // BalancedAllocation: (1 - standard deviation of the requested fractions) * 100.
  const auto fraction = [](int64_t req, int64_t alloc) {
    return alloc == 0 ? 1.0 : std::min(1.0, double(req) / double(alloc));
  };
  const double fc = fraction(cpu, n.cpu_milli), fm = fraction(mem, n.memory_mib);
  const double sd = std::fabs(fc - fm) / 2;
  const int64_t balanced = static_cast<int64_t>((1 - sd) * double(kMaxNodeScore));
  return least_allocated + balanced;
}

size_t KubeSchedulerEmulator::Select(const EmulatedPod& pod, const std::vector<size_t>& feasible,
                                     const std::vector<int64_t>& extender_priorities) {
  if (feasible.size() == 1) return feasible[0];
  size_t selected = 0;
  int64_t best = 0;
  int64_t ties = 0;
  for (size_t k = 0; k < feasible.size(); ++k) {
    int64_t total =
        extender_priorities[k] * options_.extender_weight * (kMaxNodeScore / kMaxExtenderPriority);
    if (options_.default_scores) total += DefaultScore(feasible[k], pod);
    if (k == 0 || total > best) {
      best = total;
      selected = k;
      ties = 1;
    } else if (total == best) {
      ++ties;
      if (rng_.UniformInt(static_cast<uint64_t>(ties)) == 0) selected = k;
    }
  }
  return feasible[selected];
}

void KubeSchedulerEmulator::Assume(size_t node, const EmulatedPod& pod) {
  requested_[node].cpu_milli += pod.cpu_milli;
  requested_[node].memory_mib += pod.memory_mib;
  requested_[node].gpu_units += pod.gpu_units;
  ++pod_count_[node];
}

void KubeSchedulerEmulator::Forget(size_t node, const EmulatedPod& pod) {
  requested_[node].cpu_milli -= pod.cpu_milli;
  requested_[node].memory_mib -= pod.memory_mib;
  requested_[node].gpu_units -= pod.gpu_units;
  --pod_count_[node];
}

}  // namespace vgpu::k8s::testing
