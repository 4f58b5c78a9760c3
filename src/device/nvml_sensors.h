// NvmlSensors: the device backend's readings of clocks, device memory temperature, energy, video
// engine utilization and row remapping (common/nvml_sensor_api.h), through NVML entry points
// looked up with dlsym in the already loaded NVML. A missing entry point, or one that answers
// with an error (NVML_ERROR_NOT_SUPPORTED on GPUs without the sensor), leaves its field unset:
// never a made-up value. Thread-safe (no state after construction).
#pragma once

#include <string>
#include <vector>

#include "device/device_backend.h"

namespace vgpu::device {

class NvmlSensors {
 public:
  // `nvml` is the dlopen handle of libnvidia-ml.so.1.
  explicit NvmlSensors(void* nvml);

  // Fills memory_temperature_celsius, energy_joules_total, sm_clock_hz, memory_clock_hz,
  // encoder_utilization, decoder_utilization and the remapped-row fields of `s` where the GPU
  // (`device`, its nvmlDevice_t) gives them.
  void Read(void* device, DeviceSample* s) const;

  // Names of the entry points this NVML lacks.
  std::vector<std::string> Missing() const { return missing_; }

 private:
  void* field_values_ = nullptr;
  void* total_energy_ = nullptr;
  void* clock_info_ = nullptr;
  void* encoder_ = nullptr;
  void* decoder_ = nullptr;
  void* remapped_rows_ = nullptr;
  std::vector<std::string> missing_;
};

}  // namespace vgpu::device
