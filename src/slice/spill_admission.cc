#include "slice/spill_admission.h"

#include <cstdio>

#include "common/units.h"

namespace vgpu::slice {

SpillDecision AdmitSpill(const SpillAsk& ask, const SpillBudget& b) {
  SpillDecision d;
  uint64_t usable = b.host_available > b.headroom ? b.host_available - b.headroom : 0;
  uint64_t free_for_spill = usable > b.already_spilled ? usable - b.already_spilled : 0;
  if (ask.spill_bytes > free_for_spill) {
    d.reason = "host memory cannot cover the spill: " + FormatBytes(ask.spill_bytes) + " asked, " +
               FormatBytes(b.host_available) + " available - " + FormatBytes(b.headroom) +
               " headroom - " + FormatBytes(b.already_spilled) +
               " already spilled = " + FormatBytes(free_for_spill);
    return d;
  }
  if (b.gpu_physical == 0) {
    d.reason = "the GPU's memory is unknown";
    return d;
  }
  double ratio = static_cast<double>(ask.promised_on_gpu) / static_cast<double>(b.gpu_physical);
  if (ratio > b.max_ratio) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "the GPU would be promised %.2fx its memory (%s of %s), above the cap of %.2fx",
                  ratio, FormatBytes(ask.promised_on_gpu).c_str(),
                  FormatBytes(b.gpu_physical).c_str(), b.max_ratio);
    d.reason = buf;
    return d;
  }
  d.admitted = true;
  return d;
}

SpillDecision AdmitSpillOnGpus(const std::vector<SpillGpu>& gpus, uint64_t already_spilled,
                               uint64_t host_available, const SpillPolicy& policy) {
  SpillDecision d;
  if (gpus.empty()) {
    d.reason = "the slice's GPUs could not be found to check the spill against";
    return d;
  }
  uint64_t already = already_spilled;
  for (const SpillGpu& g : gpus) {
    SpillAsk ask;
    ask.promised_on_gpu = g.promised_by_others + g.limit;
    uint64_t over = ask.promised_on_gpu > g.physical ? ask.promised_on_gpu - g.physical : 0;
    ask.spill_bytes = over < g.limit ? over : g.limit;
    SpillBudget budget;
    budget.host_available = host_available;
    budget.headroom = policy.headroom;
    budget.already_spilled = already;
    budget.gpu_physical = g.physical;
    budget.max_ratio = policy.max_ratio;
    SpillDecision one = AdmitSpill(ask, budget);
    if (!one.admitted) {
      one.reason = g.name + ": " + one.reason;
      return one;
    }
    already += ask.spill_bytes;
  }
  d.admitted = true;
  return d;
}

}  // namespace vgpu::slice
