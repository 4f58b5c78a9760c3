#include "node/metrics/metrics_telemetry.h"

#include <string>

#include "node/metrics/metrics_catalog.h"

namespace vgpu::node {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

const char* const kCopyKindNames[4] = {"host_to_device", "device_to_host", "device_to_device",
                                       "peer"};

double Seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

// dcgm-exporter's labels for a series with our labels `l`.
Labels DcgmLabels(const Labels& l) {
  Labels out;
  const std::string gpu = LabelValue(l, "gpu");
  out.emplace_back("gpu", gpu);
  out.emplace_back("UUID", LabelValue(l, "uuid"));
  out.emplace_back("device", "nvidia" + gpu);
  const std::string model = LabelValue(l, "model");
  if (!model.empty()) out.emplace_back("modelName", model);
  out.emplace_back("Hostname", LabelValue(l, "node"));
  for (const char* key : {"GPU_I_PROFILE", "GPU_I_ID", "namespace", "pod", "container"}) {
    const std::string v = LabelValue(l, key);
    if (!v.empty()) out.emplace_back(key, v);
  }
  return out;
}

// Adds each sample of family `from` to `to` with dcgm-exporter's labels and the value multiplied
// by `scale`; with `type`, only the samples whose label "type" has that value.
void AliasInto(MetricsBuilder& m, const MetricDef& from, const MetricDef& to, double scale,
               const char* type) {
  m.Derive(from, to, [&](const Labels& in, Labels* out, double* v) {
    if (type != nullptr && LabelValue(in, "type") != type) return false;
    *out = DcgmLabels(in);
    *v *= scale;
    return true;
  });
}

}  // namespace

void AddSliceCounterMetrics(MetricsBuilder& m, const Labels& l, const SliceCounterValues& c) {
  auto counter = [&](const MetricDef& def, double value) { m.Add(def, l, value); };
  counter(metric::vgpu_slice_kernel_launches_total, static_cast<double>(c.launches));
  counter(metric::vgpu_slice_graph_launches_total, static_cast<double>(c.graph_launches));
  counter(metric::vgpu_slice_launch_failures_total, static_cast<double>(c.launch_failures));
  for (int k = 0; k < 4; ++k) {
    Labels kl = l;
    kl.emplace_back("kind", kCopyKindNames[k]);
    m.Add(metric::vgpu_slice_copy_bytes_total, kl, static_cast<double>(c.copy_bytes[k]));
  }
  counter(metric::vgpu_slice_memory_allocations_total, static_cast<double>(c.allocations));
  counter(metric::vgpu_slice_memory_frees_total, static_cast<double>(c.frees));
  counter(metric::vgpu_slice_oom_refusals_total, static_cast<double>(c.oom_refusals));
  counter(metric::vgpu_slice_gate_wait_seconds_total, Seconds(c.gate_wait_ns));
  counter(metric::vgpu_slice_pause_wait_seconds_total, Seconds(c.pause_wait_ns));
  counter(metric::vgpu_slice_paused_launches_total, static_cast<double>(c.held_launches));
  counter(metric::vgpu_slice_gpu_busy_seconds_total, Seconds(c.busy_ns));
}

void AddSlicePeakMetric(MetricsBuilder& m, const Labels& l, uint64_t peak_bytes) {
  m.Add(metric::vgpu_slice_memory_peak_bytes, l, static_cast<double>(peak_bytes));
}

void AddGpmMetrics(MetricsBuilder& m, const Labels& l, const device::GpmMetrics& g) {
  auto add = [&](const MetricDef& def, const std::optional<double>& v) {
    if (v.has_value()) m.Add(def, l, *v);
  };
  add(metric::vgpu_gpu_gpm_graphics_activity_ratio, g.graphics_activity);
  add(metric::vgpu_gpu_gpm_sm_activity_ratio, g.sm_activity);
  add(metric::vgpu_gpu_gpm_sm_occupancy_ratio, g.sm_occupancy);
  add(metric::vgpu_gpu_gpm_tensor_activity_ratio, g.tensor_activity);
  add(metric::vgpu_gpu_gpm_dram_activity_ratio, g.dram_activity);
  add(metric::vgpu_gpu_gpm_pcie_transmit_bytes_per_second, g.pcie_transmit_bytes_per_second);
  add(metric::vgpu_gpu_gpm_pcie_receive_bytes_per_second, g.pcie_receive_bytes_per_second);
  add(metric::vgpu_gpu_gpm_nvlink_transmit_bytes_per_second, g.nvlink_transmit_bytes_per_second);
  add(metric::vgpu_gpu_gpm_nvlink_receive_bytes_per_second, g.nvlink_receive_bytes_per_second);
}

void AddDcgmAliases(MetricsBuilder& m) {
  // dcgm-exporter's default counters (etc/default-counters.csv) that a device reading gives, and
  // its profiling fields from GPM; docs/telemetry.md lists them and those not covered.
  struct Alias {
    const MetricDef* from;
    const MetricDef* to;
    double scale;
    const char* type = nullptr;  // only samples with this "type" label
  };
  static const Alias kAliases[] = {
      {&metric::vgpu_gpu_sm_clock_hertz, &metric::DCGM_FI_DEV_SM_CLOCK, 1e-6},
      {&metric::vgpu_gpu_memory_clock_hertz, &metric::DCGM_FI_DEV_MEM_CLOCK, 1e-6},
      {&metric::vgpu_gpu_memory_temperature_celsius, &metric::DCGM_FI_DEV_MEMORY_TEMP, 1},
      {&metric::vgpu_gpu_temperature_celsius, &metric::DCGM_FI_DEV_GPU_TEMP, 1},
      {&metric::vgpu_gpu_power_watts, &metric::DCGM_FI_DEV_POWER_USAGE, 1},
      {&metric::vgpu_gpu_energy_joules_total, &metric::DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, 1000},
      {&metric::vgpu_gpu_pcie_transmit_bytes_per_second, &metric::DCGM_FI_DEV_PCIE_TX_THROUGHPUT,
       1 / 1024.0},
      {&metric::vgpu_gpu_pcie_receive_bytes_per_second, &metric::DCGM_FI_DEV_PCIE_RX_THROUGHPUT,
       1 / 1024.0},
      {&metric::vgpu_gpu_pcie_replay_errors_total, &metric::DCGM_FI_DEV_PCIE_REPLAY_COUNTER, 1},
      {&metric::vgpu_gpu_sm_utilization_ratio, &metric::DCGM_FI_DEV_GPU_UTIL, 100},
      {&metric::vgpu_slice_compute_utilization_ratio, &metric::DCGM_FI_DEV_GPU_UTIL, 100},
      {&metric::vgpu_gpu_memory_bandwidth_utilization_ratio, &metric::DCGM_FI_DEV_MEM_COPY_UTIL,
       100},
      {&metric::vgpu_gpu_encoder_utilization_ratio, &metric::DCGM_FI_DEV_ENC_UTIL, 100},
      {&metric::vgpu_gpu_decoder_utilization_ratio, &metric::DCGM_FI_DEV_DEC_UTIL, 100},
      {&metric::vgpu_gpu_last_xid, &metric::DCGM_FI_DEV_XID_ERRORS, 1},
      {&metric::vgpu_gpu_memory_used_bytes, &metric::DCGM_FI_DEV_FB_USED, 1 / kMiB},
      {&metric::vgpu_slice_memory_used_bytes, &metric::DCGM_FI_DEV_FB_USED, 1 / kMiB},
      {&metric::vgpu_gpu_remapped_rows_total, &metric::DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, 1,
       "uncorrected"},
      {&metric::vgpu_gpu_remapped_rows_total, &metric::DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS, 1,
       "corrected"},
      {&metric::vgpu_gpu_row_remap_failed, &metric::DCGM_FI_DEV_ROW_REMAP_FAILURE, 1},
      // GPM (Hopper and later; device and MIG instance series) under DCGM's profiling names.
      {&metric::vgpu_gpu_gpm_graphics_activity_ratio, &metric::DCGM_FI_PROF_GR_ENGINE_ACTIVE, 1},
      {&metric::vgpu_gpu_gpm_sm_activity_ratio, &metric::DCGM_FI_PROF_SM_ACTIVE, 1},
      {&metric::vgpu_gpu_gpm_sm_occupancy_ratio, &metric::DCGM_FI_PROF_SM_OCCUPANCY, 1},
      {&metric::vgpu_gpu_gpm_tensor_activity_ratio, &metric::DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, 1},
      {&metric::vgpu_gpu_gpm_dram_activity_ratio, &metric::DCGM_FI_PROF_DRAM_ACTIVE, 1},
      {&metric::vgpu_gpu_gpm_pcie_transmit_bytes_per_second, &metric::DCGM_FI_PROF_PCIE_TX_BYTES,
       1},
      {&metric::vgpu_gpu_gpm_pcie_receive_bytes_per_second, &metric::DCGM_FI_PROF_PCIE_RX_BYTES, 1},
      {&metric::vgpu_gpu_gpm_nvlink_transmit_bytes_per_second,
       &metric::DCGM_FI_PROF_NVLINK_TX_BYTES, 1},
      {&metric::vgpu_gpu_gpm_nvlink_receive_bytes_per_second, &metric::DCGM_FI_PROF_NVLINK_RX_BYTES,
       1},
  };
  for (const Alias& a : kAliases) AliasInto(m, *a.from, *a.to, a.scale, a.type);
  // Free framebuffer: total - used, per GPU.
  const MetricFamily* total = m.Find(metric::vgpu_gpu_memory_total_bytes);
  const MetricFamily* used = m.Find(metric::vgpu_gpu_memory_used_bytes);
  if (total == nullptr || used == nullptr) return;
  std::vector<std::pair<Labels, double>> free;
  for (const MetricSample& t : total->samples) {
    for (const MetricSample& u : used->samples) {
      if (LabelValue(u.labels, "uuid") != LabelValue(t.labels, "uuid")) continue;
      free.emplace_back(DcgmLabels(t.labels), (t.value - u.value) / kMiB);
    }
  }
  for (auto& [labels, value] : free) m.Add(metric::DCGM_FI_DEV_FB_FREE, std::move(labels), value);
}

}  // namespace vgpu::node
