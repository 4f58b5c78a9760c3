// NVML's GPM (GPU Performance Monitoring, Hopper and later) entry points and types, declared
// from the public API (nvml.h of NVML_API_VERSION 13; nvml.h is not installed on build
// machines), in the style of common/nvml_api.h: types mirror NVML's ABI, and only function
// pointer types are declared (vgpu loads libnvidia-ml.so.1 with dlopen).
//
// A GPM sample is an opaque snapshot of the GPU's (or a MIG GPU instance's) counters; two
// samples at least 100 ms apart give the metrics of the interval between them
// (nvmlGpmMetricsGet). The simulated NVML (src/simgpu/nvml/nvml_gpm.cc) simulates them from its
// timeline on Hopper and later models; the device backend (src/device/nvml_gpm.cc) reads them.
#pragma once

#include "common/nvml_api.h"

extern "C" {

typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

// nvmlGpmMetricId_t (the ids vgpu reads; NVML defines many more, up to NVML_GPM_METRIC_MAX).
enum {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
  NVML_GPM_METRIC_SM_UTIL = 2,
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,          // MiB/s
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,          // MiB/s
  NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,  // MiB/s
  NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,  // MiB/s
  NVML_GPM_METRIC_MAX = 333,
};

typedef struct {
  unsigned int metricId;    // in
  nvmlReturn_t nvmlReturn;  // out: this metric's status
  double value;             // out: percent for the _UTIL metrics, MiB/s for the _PER_SEC ones
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;  // out
} nvmlGpmMetric_t;

#define NVML_GPM_METRICS_GET_VERSION 1

typedef struct {
  unsigned int version;     // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;  // entries of metrics[] to fill
  nvmlGpmSample_t sample1;  // the earlier sample
  nvmlGpmSample_t sample2;  // the later sample
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

#define NVML_GPM_SUPPORT_VERSION 1

typedef struct {
  unsigned int version;            // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;  // out: 1 when the GPU has GPM
} nvmlGpmSupport_t;

typedef nvmlReturn_t (*nvmlGpmQueryDeviceSupport_fn)(nvmlDevice_t device,
                                                     nvmlGpmSupport_t* gpmSupport);
typedef nvmlReturn_t (*nvmlGpmSampleAlloc_fn)(nvmlGpmSample_t* gpmSample);
typedef nvmlReturn_t (*nvmlGpmSampleFree_fn)(nvmlGpmSample_t gpmSample);
typedef nvmlReturn_t (*nvmlGpmSampleGet_fn)(nvmlDevice_t device, nvmlGpmSample_t gpmSample);
typedef nvmlReturn_t (*nvmlGpmMigSampleGet_fn)(nvmlDevice_t device, unsigned int gpuInstanceId,
                                               nvmlGpmSample_t gpmSample);
typedef nvmlReturn_t (*nvmlGpmMetricsGet_fn)(nvmlGpmMetricsGet_t* metricsGet);

}  // extern "C"
