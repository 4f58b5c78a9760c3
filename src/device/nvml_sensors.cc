#include "device/nvml_sensors.h"

#include <dlfcn.h>

#include "common/nvml_sensor_api.h"

namespace vgpu::device {
namespace {

template <typename F>
F As(void* p) {
  return reinterpret_cast<F>(p);
}

}  // namespace

NvmlSensors::NvmlSensors(void* nvml) {
  auto load = [&](void** slot, const char* name) {
    *slot = nvml != nullptr ? dlsym(nvml, name) : nullptr;
    if (*slot == nullptr) missing_.emplace_back(name);
  };
  load(&field_values_, "nvmlDeviceGetFieldValues");
  load(&total_energy_, "nvmlDeviceGetTotalEnergyConsumption");
  load(&clock_info_, "nvmlDeviceGetClockInfo");
  load(&encoder_, "nvmlDeviceGetEncoderUtilization");
  load(&decoder_, "nvmlDeviceGetDecoderUtilization");
  load(&remapped_rows_, "nvmlDeviceGetRemappedRows");
}

void NvmlSensors::Read(void* device, DeviceSample* s) const {
  auto dev = static_cast<nvmlDevice_t>(device);
  if (field_values_ != nullptr) {
    nvmlFieldValue_t f{};
    f.fieldId = NVML_FI_DEV_MEMORY_TEMP;
    if (As<nvmlDeviceGetFieldValues_fn>(field_values_)(dev, 1, &f) == NVML_SUCCESS &&
        f.nvmlReturn == NVML_SUCCESS) {
      // NVML answers this field as an unsigned int; a few drivers as unsigned long long.
      s->memory_temperature_celsius = f.valueType == NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                                          ? static_cast<double>(f.value.ullVal)
                                          : static_cast<double>(f.value.uiVal);
    }
  }
  if (total_energy_ != nullptr) {
    unsigned long long mj = 0;
    if (As<nvmlDeviceGetTotalEnergyConsumption_fn>(total_energy_)(dev, &mj) == NVML_SUCCESS) {
      s->energy_joules_total = static_cast<double>(mj) / 1000.0;
    }
  }
  if (clock_info_ != nullptr) {
    unsigned int mhz = 0;
    auto clock = As<nvmlDeviceGetClockInfo_fn>(clock_info_);
    if (clock(dev, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS) s->sm_clock_hz = mhz * 1e6;
    if (clock(dev, NVML_CLOCK_MEM, &mhz) == NVML_SUCCESS) s->memory_clock_hz = mhz * 1e6;
  }
  unsigned int util = 0, period_us = 0;
  if (encoder_ != nullptr &&
      As<nvmlDeviceGetEncoderUtilization_fn>(encoder_)(dev, &util, &period_us) == NVML_SUCCESS) {
    s->encoder_utilization = util / 100.0;
  }
  if (decoder_ != nullptr &&
      As<nvmlDeviceGetDecoderUtilization_fn>(decoder_)(dev, &util, &period_us) == NVML_SUCCESS) {
    s->decoder_utilization = util / 100.0;
  }
  if (remapped_rows_ != nullptr) {
    unsigned int corrected = 0, uncorrected = 0, pending = 0, failed = 0;
    if (As<nvmlDeviceGetRemappedRows_fn>(remapped_rows_)(dev, &corrected, &uncorrected, &pending,
                                                         &failed) == NVML_SUCCESS) {
      s->remapped_rows_corrected_total = corrected;
      s->remapped_rows_uncorrected_total = uncorrected;
      s->row_remap_failed = failed != 0;
    }
  }
}

}  // namespace vgpu::device
