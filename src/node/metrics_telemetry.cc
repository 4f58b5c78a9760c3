#include "node/metrics_telemetry.h"

#include <string>

namespace vgpu::node {
namespace {

constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kCounter = MetricType::kCounter;
constexpr double kMiB = 1024.0 * 1024.0;

const char* const kCopyKindNames[4] = {"host_to_device", "device_to_host", "device_to_device",
                                       "peer"};

double Seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

std::string Get(const Labels& l, const std::string& key) {
  for (const auto& [k, v] : l) {
    if (k == key) return v;
  }
  return "";
}

// dcgm-exporter's labels for a series with our labels `l`.
Labels DcgmLabels(const Labels& l) {
  Labels out;
  const std::string gpu = Get(l, "gpu");
  out.emplace_back("gpu", gpu);
  out.emplace_back("UUID", Get(l, "uuid"));
  out.emplace_back("device", "nvidia" + gpu);
  const std::string model = Get(l, "model");
  if (!model.empty()) out.emplace_back("modelName", model);
  out.emplace_back("Hostname", Get(l, "node"));
  for (const char* key : {"GPU_I_PROFILE", "GPU_I_ID", "namespace", "pod", "container"}) {
    const std::string v = Get(l, key);
    if (!v.empty()) out.emplace_back(key, v);
  }
  return out;
}

// Adds each sample of family `from` to `to` (type `type`) with dcgm-exporter's labels and the
// value multiplied by `scale`.
void AliasInto(MetricsBuilder& m, const std::string& from, const std::string& to, MetricType type,
               const std::string& help, double scale) {
  const MetricFamily* f = m.Find(from);
  if (f == nullptr) return;
  std::vector<MetricSample> samples = f->samples;  // m.Add may move the family
  for (const MetricSample& s : samples)
    m.Add(to, type, help, DcgmLabels(s.labels), s.value * scale);
}

}  // namespace

void AddSliceCounterMetrics(MetricsBuilder& m, const Labels& l, const SliceCounterValues& c) {
  auto counter = [&](const char* name, const char* help, double value) {
    m.Add(name, kCounter, help, l, value);
  };
  counter("vgpu_slice_kernel_launches_total",
          "Kernel launches of the slice that the driver accepted (graph launches apart)",
          static_cast<double>(c.launches));
  counter("vgpu_slice_graph_launches_total", "Graph launches of the slice that the driver accepted",
          static_cast<double>(c.graph_launches));
  counter("vgpu_slice_launch_failures_total", "Launches of the slice that the driver refused",
          static_cast<double>(c.launch_failures));
  for (int k = 0; k < 4; ++k) {
    Labels kl = l;
    kl.emplace_back("kind", kCopyKindNames[k]);
    m.Add("vgpu_slice_copy_bytes_total", kCounter,
          "Bytes of the slice's copies the driver accepted, by kind (host_to_device, "
          "device_to_host, device_to_device, peer)",
          kl, static_cast<double>(c.copy_bytes[k]));
  }
  counter("vgpu_slice_memory_allocations_total",
          "Device memory allocations of the slice (charged and accepted by the driver)",
          static_cast<double>(c.allocations));
  counter("vgpu_slice_memory_frees_total", "Of the slice's device memory allocations, those freed",
          static_cast<double>(c.frees));
  counter("vgpu_slice_oom_refusals_total",
          "Device memory allocations refused because they would pass the slice's memory limit",
          static_cast<double>(c.oom_refusals));
  counter("vgpu_slice_gate_wait_seconds_total",
          "Time the slice's launches waited at the compute gate for their turn",
          Seconds(c.gate_wait_ns));
  counter("vgpu_slice_pause_wait_seconds_total",
          "Time the slice's launches waited for a quarantine pause to end",
          Seconds(c.pause_wait_ns));
  counter("vgpu_slice_paused_launches_total", "Launches of the slice that waited for a pause",
          static_cast<double>(c.held_launches));
  counter("vgpu_slice_gpu_busy_seconds_total",
          "Device time of the slice's gated launches, measured by the compute gate (0 for a "
          "slice without compute settings)",
          Seconds(c.busy_ns));
}

void AddSlicePeakMetric(MetricsBuilder& m, const Labels& l, uint64_t peak_bytes) {
  m.Add("vgpu_slice_memory_peak_bytes", kGauge,
        "Highest memory charge of the slice on the GPU since its region was created", l,
        static_cast<double>(peak_bytes));
}

void AddGpmMetrics(MetricsBuilder& m, const Labels& l, const device::GpmMetrics& g) {
  auto add = [&](const char* name, const char* help, const std::optional<double>& v) {
    if (v.has_value()) m.Add(name, kGauge, help, l, *v);
  };
  add("vgpu_gpu_gpm_graphics_activity_ratio",
      "Share of the last sample interval the graphics/compute engine was busy (GPM)",
      g.graphics_activity);
  add("vgpu_gpu_gpm_sm_activity_ratio", "Share of SMs busy over the last sample interval (GPM)",
      g.sm_activity);
  add("vgpu_gpu_gpm_sm_occupancy_ratio",
      "Resident warps as a share of the maximum over the last sample interval (GPM)",
      g.sm_occupancy);
  add("vgpu_gpu_gpm_tensor_activity_ratio",
      "Share of the last sample interval a tensor pipe was busy (GPM)", g.tensor_activity);
  add("vgpu_gpu_gpm_dram_activity_ratio",
      "DRAM bandwidth used as a share of the maximum over the last sample interval (GPM)",
      g.dram_activity);
  add("vgpu_gpu_gpm_pcie_transmit_bytes_per_second", "PCIe transmit rate (GPM)",
      g.pcie_transmit_bytes_per_second);
  add("vgpu_gpu_gpm_pcie_receive_bytes_per_second", "PCIe receive rate (GPM)",
      g.pcie_receive_bytes_per_second);
  add("vgpu_gpu_gpm_nvlink_transmit_bytes_per_second", "NVLink transmit rate, all links (GPM)",
      g.nvlink_transmit_bytes_per_second);
  add("vgpu_gpu_gpm_nvlink_receive_bytes_per_second", "NVLink receive rate, all links (GPM)",
      g.nvlink_receive_bytes_per_second);
}

void AddDcgmAliases(MetricsBuilder& m) {
  const char* util_help =
      "GPU utilization (in %); per pod on shared GPUs (alias of vgpu_gpu_sm_utilization_ratio "
      "and vgpu_slice_compute_utilization_ratio)";
  AliasInto(m, "vgpu_gpu_sm_utilization_ratio", "DCGM_FI_DEV_GPU_UTIL", kGauge, util_help, 100);
  AliasInto(m, "vgpu_slice_compute_utilization_ratio", "DCGM_FI_DEV_GPU_UTIL", kGauge, util_help,
            100);
  AliasInto(m, "vgpu_gpu_memory_bandwidth_utilization_ratio", "DCGM_FI_DEV_MEM_COPY_UTIL", kGauge,
            "Memory utilization (in %) (alias of vgpu_gpu_memory_bandwidth_utilization_ratio)",
            100);
  const char* fb_help =
      "Framebuffer memory used (in MiB); per pod on shared GPUs (alias of "
      "vgpu_gpu_memory_used_bytes and vgpu_slice_memory_used_bytes)";
  AliasInto(m, "vgpu_gpu_memory_used_bytes", "DCGM_FI_DEV_FB_USED", kGauge, fb_help, 1 / kMiB);
  AliasInto(m, "vgpu_slice_memory_used_bytes", "DCGM_FI_DEV_FB_USED", kGauge, fb_help, 1 / kMiB);
  // Free framebuffer: total - used, per GPU.
  if (const MetricFamily* total = m.Find("vgpu_gpu_memory_total_bytes")) {
    const MetricFamily* used = m.Find("vgpu_gpu_memory_used_bytes");
    std::vector<std::pair<Labels, double>> free;
    for (const MetricSample& t : total->samples) {
      if (used == nullptr) break;
      for (const MetricSample& u : used->samples) {
        if (Get(u.labels, "uuid") != Get(t.labels, "uuid")) continue;
        free.emplace_back(DcgmLabels(t.labels), (t.value - u.value) / kMiB);
      }
    }
    for (auto& [labels, value] : free) {
      m.Add("DCGM_FI_DEV_FB_FREE", kGauge,
            "Framebuffer memory free (in MiB) (vgpu_gpu_memory_total_bytes - "
            "vgpu_gpu_memory_used_bytes)",
            labels, value);
    }
  }
  // One source each, unscaled, the help being the description and "(alias of <source>)"; from
  // vgpu_gpu_gpm_* on, GPM (Hopper and later; device and MIG instance series) under DCGM's
  // profiling names.
  struct Alias {
    const char* from;
    const char* to;
    MetricType type;
    const char* description;
  };
  static constexpr Alias kAliases[] = {
      {"vgpu_gpu_temperature_celsius", "DCGM_FI_DEV_GPU_TEMP", kGauge, "GPU temperature (in C)"},
      {"vgpu_gpu_power_watts", "DCGM_FI_DEV_POWER_USAGE", kGauge, "Power draw (in W)"},
      {"vgpu_gpu_pcie_replay_errors_total", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", kCounter,
       "Total number of PCIe retries"},
      {"vgpu_gpu_gpm_graphics_activity_ratio", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", kGauge,
       "Ratio of time the graphics engine is active"},
      {"vgpu_gpu_gpm_sm_activity_ratio", "DCGM_FI_PROF_SM_ACTIVE", kGauge,
       "The ratio of cycles an SM has at least 1 warp assigned"},
      {"vgpu_gpu_gpm_sm_occupancy_ratio", "DCGM_FI_PROF_SM_OCCUPANCY", kGauge,
       "The ratio of number of warps resident on an SM"},
      {"vgpu_gpu_gpm_tensor_activity_ratio", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", kGauge,
       "Ratio of cycles the tensor (HMMA) pipe is active"},
      {"vgpu_gpu_gpm_dram_activity_ratio", "DCGM_FI_PROF_DRAM_ACTIVE", kGauge,
       "Ratio of cycles the device memory interface is active sending or receiving data"},
      {"vgpu_gpu_gpm_pcie_transmit_bytes_per_second", "DCGM_FI_PROF_PCIE_TX_BYTES", kGauge,
       "The rate of data transmitted over the PCIe bus (bytes/s)"},
      {"vgpu_gpu_gpm_pcie_receive_bytes_per_second", "DCGM_FI_PROF_PCIE_RX_BYTES", kGauge,
       "The rate of data received over the PCIe bus (bytes/s)"},
      {"vgpu_gpu_gpm_nvlink_transmit_bytes_per_second", "DCGM_FI_PROF_NVLINK_TX_BYTES", kGauge,
       "The rate of data transmitted over NVLink (bytes/s)"},
      {"vgpu_gpu_gpm_nvlink_receive_bytes_per_second", "DCGM_FI_PROF_NVLINK_RX_BYTES", kGauge,
       "The rate of data received over NVLink (bytes/s)"},
  };
  for (const Alias& a : kAliases) {
    AliasInto(m, a.from, a.to, a.type, std::string(a.description) + " (alias of " + a.from + ")",
              1);
  }
}

}  // namespace vgpu::node
