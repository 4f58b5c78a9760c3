// NVML: the modelled sensors beyond temperature and power (nvml_extra.cc), from the same model.
// - Field values: NVML_FI_DEV_MEMORY_TEMP, the device memory's temperature, follows utilization
//   as the core's does, a little cooler (30 C idle, 70 C busy all the time); every other field id
//   answers NVML_ERROR_NOT_SUPPORTED in its entry, as a real GPU does for fields it lacks.
// - Total energy: the integral of the modelled power draw (10% of the power limit idle, plus 80%
//   of it while a kernel runs) since CLOCK_MONOTONIC's zero (the machine's boot, when the
//   simulated driver is taken to load): idle power x uptime + 80% of the limit x the kernel time
//   that has run (time queued less what queued kernels still have to run). A kernel stuck past
//   its duration counts its duration.
// Video engines and row remapping are not simulated (NVML_ERROR_NOT_SUPPORTED).
#include <algorithm>

#include "common/nvml_sensor_api.h"
#include "simgpu/nvml/nvml_internal.h"
#include "simgpu/timeline.h"

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::nvml;

namespace {

// Kernel time that has run on device record `index` by `now_ns`.
uint64_t RunBusyNs(const SharedStateLayout* s, unsigned index, uint64_t now_ns) {
  const DeviceRecord& d = s->devices[index];
  uint64_t to_run = 0;
  for (uint64_t i = d.pending_head; i < d.pending_tail; ++i) {
    const PendingKernel& k = d.pending[i % kPendingCapacity];
    const uint64_t start = ResolveTime(s, k.start_ns), end = ResolveTime(s, k.end_ns);
    if (end >= kStuckBase || start >= kStuckBase || end <= now_ns) continue;
    to_run += end - std::max(start, now_ns);
  }
  return d.busy_total_ns > to_run ? d.busy_total_ns - to_run : 0;
}

}  // namespace

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                      nvmlFieldValue_t* values) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (valuesCount < 0 || (valuesCount > 0 && values == nullptr)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  for (int i = 0; i < valuesCount; ++i) {
    nvmlFieldValue_t& f = values[i];
    f.timestamp = static_cast<long long>(MonotonicNs() / 1000);
    f.latencyUsec = 0;
    if (f.fieldId == NVML_FI_DEV_MEMORY_TEMP) {
      f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      f.value.uiVal = 30 + Utilization(index, -1) * 40 / 100;
      f.nvmlReturn = NVML_SUCCESS;
    } else {
      f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
  }
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                                 unsigned long long* energy) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (energy == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const double limit_w = Spec(index).power_w;
  uint64_t now = 0, busy = 0;
  {
    SharedState::Lock lock(L().state.get());
    now = MonotonicNs();
    busy = RunBusyNs(L().state->layout(), index, now);
  }
  const double joules = limit_w * 0.1 * static_cast<double>(now) / 1e9 +
                        limit_w * 0.8 * static_cast<double>(busy) / 1e9;
  *energy = static_cast<unsigned long long>(joules * 1000.0);
  return NVML_SUCCESS;
}
