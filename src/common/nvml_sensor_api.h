// NVML's field values and the sensor readings beyond nvml_api.h that the device backend reads
// (src/device/nvml_sensors.cc) and the simulated NVML answers (src/simgpu/nvml/nvml_sensors.cc):
// types mirror NVML's ABI (nvml.h, which build machines lack), in the style of common/nvml_api.h.
#pragma once

#include <cstddef>

#include "common/nvml_api.h"

extern "C" {

typedef union nvmlValue_st {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;  // microseconds since 1970
  long long latencyUsec;
  unsigned int valueType;  // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;
static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t ABI");
static_assert(offsetof(nvmlFieldValue_t, value) == 32, "nvmlFieldValue_t ABI");

// nvmlValueType_t
#define NVML_VALUE_TYPE_UNSIGNED_INT 1
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3

// Field ids (NVML_FI_*) that vgpu reads.
#define NVML_FI_DEV_MEMORY_TEMP 82                 // device memory temperature, C
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138  // cumulative KiB, all links
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139

typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t device, int count,
                                                    nvmlFieldValue_t* values);
// mJ since the driver was last reloaded.
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t device,
                                                               unsigned long long* energy);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t device, nvmlClockType_t type,
                                                  unsigned int* clock_mhz);
// Percent over the driver's sampling period (`period_us`).
typedef nvmlReturn_t (*nvmlDeviceGetEncoderUtilization_fn)(nvmlDevice_t device,
                                                           unsigned int* utilization,
                                                           unsigned int* period_us);
typedef nvmlReturn_t (*nvmlDeviceGetDecoderUtilization_fn)(nvmlDevice_t device,
                                                           unsigned int* utilization,
                                                           unsigned int* period_us);
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_fn)(nvmlDevice_t device, unsigned int* corrected,
                                                     unsigned int* uncorrected,
                                                     unsigned int* pending,
                                                     unsigned int* failure_occurred);
}
