// GpmSampler: the GPM metrics (GPU Performance Monitoring, Hopper and later) of the device
// backend, through NVML's GPM entry points (common/nvml_gpm_api.h), looked up with dlsym in the
// already loaded NVML. Each call takes a new GPM sample of its target (a GPU, or a MIG GPU
// instance of a GPU through nvmlGpmMigSampleGet) and returns the metrics over the interval since
// the target's previous sample: nothing on the first call, nor when the previous sample is less
// than 100 ms old (NVML's sample refresh), nor on a GPU whose nvmlGpmQueryDeviceSupport says it
// has no GPM (asked once per GPU), nor without the entry points.
//
// Metrics: GRAPHICS_UTIL, SM_UTIL, SM_OCCUPANCY, ANY_TENSOR_UTIL, DRAM_BW_UTIL (percent, given
// as shares 0..1), PCIe and NVLink TX/RX (MiB/s, given as bytes/s); a metric NVML answers with an
// error is left unset. Thread-safe (one mutex); the samples it holds are freed by its destructor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "device/device_backend.h"

namespace vgpu::device {

// The metrics of one nvmlGpmMetricsGet answer. `metric_ids`, `returns` and `values` are the
// metrics[] entries' metricId, nvmlReturn (0 = success) and value. Pure.
GpmMetrics GpmMetricsFrom(const unsigned* metric_ids, const int* returns, const double* values,
                          int count);

class GpmSampler {
 public:
  // `nvml` is the dlopen handle of libnvidia-ml.so.1.
  explicit GpmSampler(void* nvml);
  ~GpmSampler();
  GpmSampler(const GpmSampler&) = delete;
  GpmSampler& operator=(const GpmSampler&) = delete;

  // False when this NVML has no GPM entry points.
  bool available() const { return available_; }
  // `device` is the GPU's nvmlDevice_t; `index` names the GPU for the sampler's state.
  std::optional<GpmMetrics> SampleDevice(int index, void* device, uint64_t now_ns);
  std::optional<GpmMetrics> SampleMig(int index, void* device, unsigned gi_id, uint64_t now_ns);

 private:
  struct Target {
    void* previous = nullptr;  // nvmlGpmSample_t
    uint64_t previous_ns = 0;
  };
  struct Api;
  bool Supported(int index, void* device);  // REQUIRES mu_
  std::optional<GpmMetrics> Take(Target& t, void* device, int gi_id, uint64_t now_ns);

  std::unique_ptr<Api> api_;
  bool available_ = false;
  std::mutex mu_;
  std::map<int, bool> supported_;                  // GPU index -> has GPM
  std::map<std::pair<int, int>, Target> targets_;  // (GPU index, GI id or -1) -> last sample
};

}  // namespace vgpu::device
