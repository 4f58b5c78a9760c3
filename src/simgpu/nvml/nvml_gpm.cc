// GPM (GPU Performance Monitoring) on the simulated GPU, for models of compute capability 9.0
// and later (h100, h200; an a100 answers isSupportedDevice = 0, as a real A100 does). A sample
// records its time, the device record it reads (the GPU's, or a MIG GPU instance's) and the host
// link's byte counters; nvmlGpmMetricsGet over two samples at least 100 ms apart gives:
//   GRAPHICS_UTIL, SM_UTIL  = the timeline's busy time in the interval / the interval, in %
//                             (the simulated GPU runs one kernel at a time on all its SMs)
//   PCIE_TX / PCIE_RX       = device-to-host / host-to-device bytes queued in the interval, MiB/s
//   NVLINK_TOTAL_TX / _RX   = 0 (the simulated GPUs have no NVLink traffic)
// and NVML_ERROR_NOT_SUPPORTED for every other metric (occupancy, tensor and DRAM activity are
// not modelled).
#include <algorithm>
#include <new>

#include "common/nvml_gpm_api.h"
#include "simgpu/nvml/nvml_internal.h"
#include "simgpu/timeline.h"

struct nvmlGpmSample_st {
  uint32_t magic;
  bool taken;
  int record;
  uint64_t t_ns;
  uint64_t copy_bytes[2];
};

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::nvml;

namespace {

constexpr uint32_t kSampleMagic = 0x47504d53;  // "GPMS"
constexpr uint64_t kMinIntervalNs = 100'000'000;
constexpr double kMiB = 1024.0 * 1024.0;

bool HasGpm(unsigned index) { return Spec(index).cc_major >= 9; }

nvmlReturn_t Take(int record, nvmlGpmSample_t sample) {
  if (sample == nullptr || sample->magic != kSampleMagic) return NVML_ERROR_INVALID_ARGUMENT;
  Library& l = L();
  SharedState::Lock lock(l.state.get());
  const uint64_t now = MonotonicNs();
  Settle(l.state->layout(), record, now);
  const DeviceRecord& d = l.state->layout()->devices[record];
  sample->record = record;
  sample->t_ns = now;
  sample->copy_bytes[0] = d.copy_bytes_total[0];
  sample->copy_bytes[1] = d.copy_bytes_total[1];
  sample->taken = true;
  return NVML_SUCCESS;
}

}  // namespace

SIMGPU_NVML_API nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device,
                                                       nvmlGpmSupport_t* gpmSupport) {
  unsigned index = 0;
  int record = 0;
  bool mig = false;
  if (nvmlReturn_t rc = CheckAnyDevice(device, &index, &record, &mig); rc != NVML_SUCCESS) {
    return rc;
  }
  if (gpmSupport == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  gpmSupport->isSupportedDevice = HasGpm(index) ? 1 : 0;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (gpmSample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto* s = new (std::nothrow) nvmlGpmSample_st{};
  if (s == nullptr) return NVML_ERROR_MEMORY;
  s->magic = kSampleMagic;
  *gpmSample = s;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
  if (gpmSample == nullptr || gpmSample->magic != kSampleMagic) return NVML_ERROR_INVALID_ARGUMENT;
  gpmSample->magic = 0;
  delete gpmSample;
  return NVML_SUCCESS;
}

SIMGPU_NVML_API nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
  unsigned index = 0;
  int record = 0;
  bool mig = false;
  if (nvmlReturn_t rc = CheckAnyDevice(device, &index, &record, &mig); rc != NVML_SUCCESS) {
    return rc;
  }
  if (!HasGpm(index)) return NVML_ERROR_NOT_SUPPORTED;
  return Take(record, gpmSample);
}

SIMGPU_NVML_API nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
                                                 nvmlGpmSample_t gpmSample) {
  unsigned index = 0;
  if (nvmlReturn_t rc = CheckDevice(device, &index); rc != NVML_SUCCESS) return rc;
  if (!HasGpm(index)) return NVML_ERROR_NOT_SUPPORTED;
  if (!MigEnabled(index)) return NVML_ERROR_NOT_FOUND;
  int record = -1;
  {
    Library& l = L();
    SharedState::Lock lock(l.state.get());
    const SharedStateLayout* layout = l.state->layout();
    for (int slot = 0; slot < kMaxMigInstances; ++slot) {
      const MigGpuInstanceRecord& r = layout->mig_instances[slot];
      if (r.used != 0 && r.parent == index && r.id == gpuInstanceId) record = kMaxDevices + slot;
    }
  }
  if (record < 0) return NVML_ERROR_NOT_FOUND;
  return Take(record, gpmSample);
}

SIMGPU_NVML_API nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet) {
  if (nvmlReturn_t rc = CheckInit(); rc != NVML_SUCCESS) return rc;
  if (metricsGet == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION) {
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  }
  const nvmlGpmSample_t a = metricsGet->sample1;
  const nvmlGpmSample_t b = metricsGet->sample2;
  if (a == nullptr || b == nullptr || a->magic != kSampleMagic || b->magic != kSampleMagic ||
      !a->taken || !b->taken || a->record != b->record || b->t_ns <= a->t_ns ||
      metricsGet->numMetrics > NVML_GPM_METRIC_MAX) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const uint64_t interval = b->t_ns - a->t_ns;
  if (interval < kMinIntervalNs) return NVML_ERROR_INVALID_ARGUMENT;
  uint64_t busy = 0;
  {
    Library& l = L();
    SharedState::Lock lock(l.state.get());
    busy = BusyInWindow(l.state->layout(), a->record, -1, a->t_ns, b->t_ns);
  }
  const double seconds = static_cast<double>(interval) / 1e9;
  const double util = std::min(100.0, 100.0 * static_cast<double>(busy) / interval);
  for (unsigned i = 0; i < metricsGet->numMetrics; ++i) {
    nvmlGpmMetric_t& m = metricsGet->metrics[i];
    m.nvmlReturn = NVML_SUCCESS;
    m.metricInfo = {nullptr, nullptr, nullptr};
    switch (m.metricId) {
      case NVML_GPM_METRIC_GRAPHICS_UTIL:
      case NVML_GPM_METRIC_SM_UTIL:
        m.value = util;
        break;
      case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
        m.value = static_cast<double>(b->copy_bytes[1] - a->copy_bytes[1]) / kMiB / seconds;
        break;
      case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
        m.value = static_cast<double>(b->copy_bytes[0] - a->copy_bytes[0]) / kMiB / seconds;
        break;
      case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
      case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
        m.value = 0;
        break;
      default:
        m.value = 0;
        m.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        break;
    }
  }
  return NVML_SUCCESS;
}
