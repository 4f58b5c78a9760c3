#include "device/nvml_gpm.h"

#include <dlfcn.h>

#include <memory>
#include <type_traits>

#include "common/nvml_gpm_api.h"

namespace vgpu::device {
namespace {

constexpr uint64_t kMinIntervalNs = 100'000'000;  // NVML's GPM sample refresh
constexpr double kMiB = 1024.0 * 1024.0;

const unsigned kMetricIds[] = {
    NVML_GPM_METRIC_GRAPHICS_UTIL,
    NVML_GPM_METRIC_SM_UTIL,
    NVML_GPM_METRIC_SM_OCCUPANCY,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    NVML_GPM_METRIC_DRAM_BW_UTIL,
    NVML_GPM_METRIC_PCIE_TX_PER_SEC,
    NVML_GPM_METRIC_PCIE_RX_PER_SEC,
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
};
constexpr int kMetricCount = sizeof(kMetricIds) / sizeof(kMetricIds[0]);

}  // namespace

GpmMetrics GpmMetricsFrom(const unsigned* metric_ids, const int* returns, const double* values,
                          int count) {
  GpmMetrics m;
  for (int i = 0; i < count; ++i) {
    if (returns[i] != NVML_SUCCESS) continue;
    const double v = values[i];
    switch (metric_ids[i]) {
      case NVML_GPM_METRIC_GRAPHICS_UTIL:
        m.graphics_activity = v / 100;
        break;
      case NVML_GPM_METRIC_SM_UTIL:
        m.sm_activity = v / 100;
        break;
      case NVML_GPM_METRIC_SM_OCCUPANCY:
        m.sm_occupancy = v / 100;
        break;
      case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
        m.tensor_activity = v / 100;
        break;
      case NVML_GPM_METRIC_DRAM_BW_UTIL:
        m.dram_activity = v / 100;
        break;
      case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
        m.pcie_transmit_bytes_per_second = v * kMiB;
        break;
      case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
        m.pcie_receive_bytes_per_second = v * kMiB;
        break;
      case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
        m.nvlink_transmit_bytes_per_second = v * kMiB;
        break;
      case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
        m.nvlink_receive_bytes_per_second = v * kMiB;
        break;
      default:
        break;
    }
  }
  return m;
}

struct GpmSampler::Api {
  nvmlGpmQueryDeviceSupport_fn query = nullptr;
  nvmlGpmSampleAlloc_fn alloc = nullptr;
  nvmlGpmSampleFree_fn free = nullptr;
  nvmlGpmSampleGet_fn get = nullptr;
  nvmlGpmMigSampleGet_fn mig_get = nullptr;  // optional: no per-instance metrics without it
  nvmlGpmMetricsGet_fn metrics = nullptr;
};

GpmSampler::GpmSampler(void* nvml) : api_(std::make_unique<Api>()) {
  if (nvml == nullptr) return;
  auto load = [&](auto* slot, const char* name) {
    *slot = reinterpret_cast<std::remove_pointer_t<decltype(slot)>>(dlsym(nvml, name));
  };
  load(&api_->query, "nvmlGpmQueryDeviceSupport");
  load(&api_->alloc, "nvmlGpmSampleAlloc");
  load(&api_->free, "nvmlGpmSampleFree");
  load(&api_->get, "nvmlGpmSampleGet");
  load(&api_->mig_get, "nvmlGpmMigSampleGet");
  load(&api_->metrics, "nvmlGpmMetricsGet");
  available_ = api_->query != nullptr && api_->alloc != nullptr && api_->free != nullptr &&
               api_->get != nullptr && api_->metrics != nullptr;
}

GpmSampler::~GpmSampler() {
  if (api_->free == nullptr) return;
  for (auto& [key, t] : targets_) {
    if (t.previous != nullptr) api_->free(static_cast<nvmlGpmSample_t>(t.previous));
  }
}

bool GpmSampler::Supported(int index, void* device) {
  auto it = supported_.find(index);
  if (it != supported_.end()) return it->second;
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  bool yes = api_->query(static_cast<nvmlDevice_t>(device), &support) == NVML_SUCCESS &&
             support.isSupportedDevice != 0;
  supported_[index] = yes;
  return yes;
}

std::optional<GpmMetrics> GpmSampler::Take(Target& t, void* device, int gi_id, uint64_t now_ns) {
  if (t.previous != nullptr && now_ns - t.previous_ns < kMinIntervalNs) return std::nullopt;
  nvmlGpmSample_t current = nullptr;
  if (api_->alloc(&current) != NVML_SUCCESS || current == nullptr) return std::nullopt;
  nvmlDevice_t dev = static_cast<nvmlDevice_t>(device);
  nvmlReturn_t r = gi_id < 0 ? api_->get(dev, current)
                             : api_->mig_get(dev, static_cast<unsigned>(gi_id), current);
  if (r != NVML_SUCCESS) {
    api_->free(current);
    return std::nullopt;
  }
  std::optional<GpmMetrics> out;
  if (t.previous != nullptr) {
    auto get = std::make_unique<nvmlGpmMetricsGet_t>();
    get->version = NVML_GPM_METRICS_GET_VERSION;
    get->numMetrics = kMetricCount;
    get->sample1 = static_cast<nvmlGpmSample_t>(t.previous);
    get->sample2 = current;
    for (int i = 0; i < kMetricCount; ++i) get->metrics[i].metricId = kMetricIds[i];
    if (api_->metrics(get.get()) == NVML_SUCCESS) {
      unsigned ids[kMetricCount];
      int returns[kMetricCount];
      double values[kMetricCount];
      for (int i = 0; i < kMetricCount; ++i) {
        ids[i] = get->metrics[i].metricId;
        returns[i] = static_cast<int>(get->metrics[i].nvmlReturn);
        values[i] = get->metrics[i].value;
      }
      out = GpmMetricsFrom(ids, returns, values, kMetricCount);
    }
    api_->free(static_cast<nvmlGpmSample_t>(t.previous));
  }
  t.previous = current;
  t.previous_ns = now_ns;
  return out;
}

std::optional<GpmMetrics> GpmSampler::SampleDevice(int index, void* device, uint64_t now_ns) {
  if (!available_ || device == nullptr) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  if (!Supported(index, device)) return std::nullopt;
  return Take(targets_[{index, -1}], device, -1, now_ns);
}

std::optional<GpmMetrics> GpmSampler::SampleMig(int index, void* device, unsigned gi_id,
                                                uint64_t now_ns) {
  if (!available_ || api_->mig_get == nullptr || device == nullptr) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  if (!Supported(index, device)) return std::nullopt;
  return Take(targets_[{index, static_cast<int>(gi_id)}], device, static_cast<int>(gi_id), now_ns);
}

}  // namespace vgpu::device
