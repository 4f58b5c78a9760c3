#include "sched/workload.h"

#include <algorithm>
#include <string>

namespace vgpu::sched {

size_t WorkloadCounter::KeyHash::operator()(const Key& k) const {
  uint64_t h = static_cast<uint64_t>(k.cpu_milli) * 0x9e3779b97f4a7c15ULL;
  h ^= (static_cast<uint64_t>(k.gpu_milli) << 8 | static_cast<uint64_t>(k.num_gpus)) +
       0xbf58476d1ce4e5b9ULL + (h << 6) + (h >> 2);
  h ^= k.models + 0x94d049bb133111ebULL + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

void WorkloadCounter::Add(const PodRequest& r, int64_t n) {
  counts_[Key{r.cpu_milli, r.gpu_milli, r.num_gpus, r.models.bits()}] += n;
  total_ += n;
}

std::vector<WorkloadSpec> WorkloadCounter::Typical(const ModelRegistry* names,
                                                   double coverage) const {
  struct Entry {
    WorkloadSpec spec;
    std::string model_text;
  };
  std::vector<Entry> entries;
  entries.reserve(counts_.size());
  for (const auto& [k, count] : counts_) {
    Entry e;
    e.spec.cpu_milli = k.cpu_milli;
    e.spec.gpu_milli = k.gpu_milli;
    e.spec.num_gpus = k.num_gpus;
    e.spec.models = ModelSet::FromBits(k.models);
    e.spec.count = count;
    if (names != nullptr) e.model_text = names->Format(e.spec.models);
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(), [names](const Entry& a, const Entry& b) {
    if (a.spec.count != b.spec.count) return a.spec.count > b.spec.count;
    if (a.spec.cpu_milli != b.spec.cpu_milli) return a.spec.cpu_milli > b.spec.cpu_milli;
    if (a.spec.gpu_milli != b.spec.gpu_milli) return a.spec.gpu_milli > b.spec.gpu_milli;
    if (a.spec.num_gpus != b.spec.num_gpus) return a.spec.num_gpus > b.spec.num_gpus;
    if (names != nullptr && a.model_text != b.model_text) return a.model_text > b.model_text;
    return a.spec.models.bits() > b.spec.models.bits();
  });
  // Same arithmetic as the FGD simulator: add specs while the running count is below
  // coverage * total.
  const double total = static_cast<double>(total_);
  const double expected = coverage * 100.0 * total / 100.0;
  double cum = 0;
  size_t taken = 0;
  while (taken < entries.size() && cum < expected) {
    cum += static_cast<double>(entries[taken].spec.count);
    ++taken;
  }
  std::vector<WorkloadSpec> out;
  out.reserve(taken);
  for (size_t i = 0; i < taken; ++i) {
    WorkloadSpec s = entries[i].spec;
    s.weight = static_cast<double>(s.count) / cum;
    out.push_back(s);
  }
  return out;
}

std::vector<WorkloadSpec> TypicalWorkload(std::span<const PodRequest> pods,
                                          const ModelRegistry* names, double coverage) {
  WorkloadCounter counter;
  for (const PodRequest& r : pods) counter.Add(r);
  return counter.Typical(names, coverage);
}

}  // namespace vgpu::sched
