#include "node/metrics/metrics_hami.h"

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "node/metrics/metrics_catalog.h"

namespace vgpu::node {
namespace {

// A slice sample's identity, to look up its values in other families.
std::string SliceKey(const Labels& l) {
  return LabelValue(l, "namespace") + "/" + LabelValue(l, "pod") + "/" +
         LabelValue(l, "container") + "/" + LabelValue(l, "uuid");
}

// Values of family `name` by slice key (empty when the family is absent).
std::map<std::string, double> SliceValues(const MetricsBuilder& m, const MetricDef& def) {
  std::map<std::string, double> out;
  if (const MetricFamily* f = m.Find(def)) {
    for (const MetricSample& s : f->samples) out[SliceKey(s.labels)] = s.value;
  }
  return out;
}

// HAMi's percentages of integer percents: exact integers (HAMi rounds core shares up).
double Percent(double ratio) { return std::ceil(ratio * 100 - 1e-9); }

// The host series of HAMi's vGPU monitor: node, device_index, device_uuid, device_type.
Labels HostLabels(const Labels& l, bool with_node = true) {
  Labels out;
  if (with_node) out.emplace_back("node", LabelValue(l, "node"));
  out.emplace_back("device_index", LabelValue(l, "gpu"));
  out.emplace_back("device_uuid", LabelValue(l, "uuid"));
  out.emplace_back("device_type", "NVIDIA-" + LabelValue(l, "model"));
  return out;
}

// The per-GPU series of HAMi's scheduler: node, device_uuid, device_index, [extra], device_type.
Labels SchedulerGpuLabels(const Labels& l, const Labels& extra = {}, bool with_type = true) {
  Labels out = {{"node", LabelValue(l, "node")},
                {"device_uuid", LabelValue(l, "uuid")},
                {"device_index", LabelValue(l, "gpu")}};
  out.insert(out.end(), extra.begin(), extra.end());
  if (with_type) out.emplace_back("device_type", "NVIDIA-" + LabelValue(l, "model"));
  return out;
}

// The per-container series of HAMi's vGPU monitor.
Labels MonitorSliceLabels(const Labels& l) {
  return {{"namespace", LabelValue(l, "namespace")},
          {"pod", LabelValue(l, "pod")},
          {"container", LabelValue(l, "container")},
          {"vdevice_index", LabelValue(l, "cuda_index")},
          {"device_uuid", LabelValue(l, "uuid")}};
}

void AddZone(Labels* l) { l->emplace_back("zone", "vGPU"); }

void AddHostSeries(MetricsBuilder& m) {
  auto host = [&](const MetricDef& from, const MetricDef& to, double scale, bool with_node) {
    m.Derive(from, to, [&](const Labels& in, Labels* out, double* v) {
      *out = HostLabels(in, with_node);
      AddZone(out);
      *v *= scale;
      return true;
    });
  };
  host(metric::vgpu_gpu_memory_used_bytes, metric::hami_host_gpu_memory_used_bytes, 1, true);
  host(metric::vgpu_gpu_sm_utilization_ratio, metric::hami_host_gpu_utilization_ratio, 100, true);
  // HAMi gives this one no node label.
  host(metric::vgpu_gpu_memory_bandwidth_utilization_ratio,
       metric::hami_host_gpu_memory_controller_utilization_ratio, 100, false);
  host(metric::vgpu_gpu_temperature_celsius, metric::hami_host_gpu_temperature_celsius, 1, true);
  host(metric::vgpu_gpu_power_watts, metric::hami_host_gpu_power_usage_watts, 1, true);
  m.Derive(metric::vgpu_gpu_ecc_errors_total, metric::hami_host_gpu_ecc_errors_total,
           [](const Labels& in, Labels* out, double*) {
             *out = HostLabels(in);
             out->emplace_back("error_type", LabelValue(in, "type"));
             AddZone(out);
             return true;
           });
}

void AddSchedulerGpuSeries(MetricsBuilder& m) {
  std::map<std::string, double> total;  // uuid -> device memory
  if (const MetricFamily* f = m.Find(metric::vgpu_gpu_memory_total_bytes)) {
    for (const MetricSample& s : f->samples) total[LabelValue(s.labels, "uuid")] = s.value;
  }
  const Labels cores = {{"device_cores", "100"}};
  auto gpu = [&](const MetricDef& from, const MetricDef& to,
                 const std::function<bool(const Labels&, Labels*, double*)>& f) {
    m.Derive(from, to, [&](const Labels& in, Labels* out, double* v) {
      if (!f(in, out, v)) return false;
      AddZone(out);
      return true;
    });
  };
  gpu(metric::vgpu_gpu_memory_total_bytes, metric::hami_gpu_memory_limit_bytes,
      [](const Labels& in, Labels* out, double*) {
        *out = SchedulerGpuLabels(in);
        return true;
      });
  gpu(metric::vgpu_gpu_memory_total_bytes, metric::hami_gpu_core_limit_ratio,
      [](const Labels& in, Labels* out, double* v) {
        *out = SchedulerGpuLabels(in);
        *v = 100;
        return true;
      });
  gpu(metric::vgpu_gpu_memory_allocated_bytes, metric::hami_gpu_memory_allocated_bytes,
      [&](const Labels& in, Labels* out, double*) {
        *out = SchedulerGpuLabels(in, cores);
        return true;
      });
  gpu(metric::vgpu_gpu_slices, metric::hami_gpu_shared_count,
      [](const Labels& in, Labels* out, double*) {
        *out = SchedulerGpuLabels(in);
        return true;
      });
  gpu(metric::vgpu_gpu_compute_allocated_ratio, metric::hami_gpu_core_allocated_ratio,
      [](const Labels& in, Labels* out, double* v) {
        *out = SchedulerGpuLabels(in);
        *v = Percent(*v);
        return true;
      });
  gpu(metric::vgpu_gpu_memory_allocated_bytes, metric::hami_node_gpu_overview,
      [&](const Labels& in, Labels* out, double*) {
        const double mib = std::floor(total[LabelValue(in, "uuid")] / (1024.0 * 1024.0));
        *out = SchedulerGpuLabels(
            in, {{"device_cores", "100"}, {"device_memory_limit", FormatValue(mib)}});
        return true;
      });
  gpu(metric::vgpu_gpu_memory_allocated_bytes, metric::hami_node_gpu_memory_allocated_ratio,
      [&](const Labels& in, Labels* out, double* v) {
        const double t = total[LabelValue(in, "uuid")];
        if (t <= 0) return false;
        *out = SchedulerGpuLabels(in, {}, false);
        *v /= t;
        return true;
      });
}

void AddSliceSeries(MetricsBuilder& m, const std::vector<PodInfo>& pods) {
  // What libvgpu charged when the slice has a region, else the driver's view.
  const auto charged = SliceValues(m, metric::vgpu_slice_memory_charged_bytes);
  const auto used = SliceValues(m, metric::vgpu_slice_memory_used_bytes);
  // The arbiter's measurement when the slice has one, else the driver's per-process sampling.
  const auto achieved = SliceValues(m, metric::vgpu_slice_compute_achieved_ratio);
  const auto sampled = SliceValues(m, metric::vgpu_slice_compute_utilization_ratio);
  auto pick = [](const std::map<std::string, double>& first,
                 const std::map<std::string, double>& second,
                 const std::string& key) -> std::optional<double> {
    if (auto it = first.find(key); it != first.end()) return it->second;
    if (auto it = second.find(key); it != second.end()) return it->second;
    return std::nullopt;
  };
  auto monitor = [&](const MetricDef& from, const MetricDef& to,
                     const std::function<bool(const Labels&, double*)>& value) {
    m.Derive(from, to, [&](const Labels& in, Labels* out, double* v) {
      if (!value(in, v)) return false;
      *out = MonitorSliceLabels(in);
      AddZone(out);
      return true;
    });
  };
  auto memory_used = [&](const Labels& in, double* v) {
    auto x = pick(charged, used, SliceKey(in));
    if (x) *v = *x;
    return x.has_value();
  };
  monitor(metric::vgpu_slice_memory_limit_bytes, metric::hami_vgpu_memory_used_bytes, memory_used);
  monitor(metric::vgpu_slice_memory_limit_bytes, metric::hami_vgpu_memory_limit_bytes,
          [](const Labels&, double*) { return true; });
  monitor(metric::vgpu_slice_memory_limit_bytes, metric::hami_container_device_memory_bytes,
          memory_used);
  monitor(metric::vgpu_slice_memory_limit_bytes, metric::hami_container_device_utilization_ratio,
          [&](const Labels& in, double* v) {
            auto x = pick(achieved, sampled, SliceKey(in));
            if (x) *v = *x * 100;
            return x.has_value();
          });
  monitor(metric::vgpu_slice_compute_idle_seconds,
          metric::hami_container_last_kernel_elapsed_seconds,
          [](const Labels&, double*) { return true; });

  // HAMi's scheduler keys a container by its position in the pod spec.
  std::map<std::string, std::map<std::string, size_t>> index;  // ns/pod -> container -> i
  for (const PodInfo& p : pods) {
    for (size_t i = 0; i < p.containers.size(); ++i) index[p.Key()][p.containers[i]] = i;
  }
  auto scheduler = [&](const MetricDef& from, const MetricDef& to, double scale) {
    m.Derive(from, to, [&](const Labels& in, Labels* out, double* v) {
      auto pod = index.find(LabelValue(in, "namespace") + "/" + LabelValue(in, "pod"));
      if (pod == index.end()) return false;
      auto c = pod->second.find(LabelValue(in, "container"));
      if (c == pod->second.end()) return false;
      *out = {{"namespace", LabelValue(in, "namespace")},
              {"node", LabelValue(in, "node")},
              {"pod", LabelValue(in, "pod")},
              {"container_index", std::to_string(c->second)},
              {"device_uuid", LabelValue(in, "uuid")}};
      AddZone(out);
      if (scale != 1) *v = Percent(*v);
      return true;
    });
  };
  scheduler(metric::vgpu_slice_memory_limit_bytes, metric::hami_vgpu_memory_allocated_bytes, 1);
  scheduler(metric::vgpu_slice_compute_limit_ratio, metric::hami_vgpu_core_allocated_ratio, 100);
}

}  // namespace

void AddHamiSeries(MetricsBuilder& m, const std::vector<PodInfo>& pods) {
  AddHostSeries(m);
  AddSchedulerGpuSeries(m);
  AddSliceSeries(m, pods);
}

}  // namespace vgpu::node
