#include "node/metrics/metrics.h"

#include <time.h>

#include <map>
#include <optional>
#include <set>

#include "node/arbiter_usage.h"
#include "node/metrics/metrics_catalog.h"
#include "node/metrics/metrics_compute.h"
#include "node/metrics/metrics_faults.h"
#include "node/metrics/metrics_hami.h"
#include "node/metrics/metrics_telemetry.h"
#include "node/metrics/metrics_text.h"
#include "node/metrics/process_owner.h"
#include "node/slice_region.h"

namespace vgpu::node {
namespace {

struct SliceStats {
  const SliceRecord* slice = nullptr;
  size_t cuda_index = 0;
  double used_bytes = 0;  // driver's view, attributed through cgroups
  double sm_share = 0;    // sum of the processes' SM shares
  bool sm_known = false;
  int processes = 0;
};

void AddGpuMetrics(MetricsBuilder& m, const MetricsSources& src) {
  const NodeState& state = *src.state;
  const auto samples = state.Samples();
  const auto health = state.health().Snapshot();
  for (size_t i = 0; i < state.devices().size(); ++i) {
    const device::DeviceInfo& d = state.devices()[i];
    Labels l = {{"node", src.node_name},
                {"gpu", std::to_string(d.index)},
                {"uuid", d.uuid},
                {"model", d.name}};
    Labels info = l;
    info.emplace_back("pci_bus_id", d.pci_bus_id);
    info.emplace_back("numa_node", std::to_string(d.numa_node));
    m.Add(metric::vgpu_gpu_info, info, 1);
    m.Add(metric::vgpu_gpu_memory_total_bytes, l, static_cast<double>(d.memory_total_bytes));
    if (d.sm_count > 0) {
      m.Add(metric::vgpu_gpu_multiprocessors, l, d.sm_count);
    }
    m.Add(metric::vgpu_gpu_units, l, state.units_per_gpu());
    {
      Labels ml = l;
      ml.emplace_back("mode", std::string(k8s::GpuModeName(state.Mode(d.index))));
      m.Add(metric::vgpu_gpu_mode, ml, 1);
    }
    // One series per MIG instance, with dcgm-exporter's labels GPU_I_PROFILE and GPU_I_ID.
    for (const device::MigInstance& mi : state.MigInstances(d.index)) {
      if (mi.ci_id < 0) continue;
      Labels il = l;
      il.emplace_back("GPU_I_PROFILE", mi.profile);
      il.emplace_back("GPU_I_ID", std::to_string(mi.gi_id));
      il.emplace_back("mig_uuid", mi.uuid);
      il.emplace_back("start", std::to_string(mi.start));
      m.Add(metric::vgpu_mig_instance_memory_total_bytes, il, static_cast<double>(mi.memory_bytes));
      m.Add(metric::vgpu_mig_instance_multiprocessors, il, mi.sm_count);
    }
    m.Add(metric::vgpu_gpu_nvlink_peers, l, static_cast<double>(d.nvlink_peers.size()));
    bool healthy = i < health.size() ? health[i].healthy : true;
    m.Add(metric::vgpu_gpu_healthy, l, healthy ? 1 : 0);
    if (i < health.size()) {
      if (src.health_events) {
        m.Add(metric::vgpu_gpu_last_xid, l, static_cast<double>(health[i].last_xid));
      }
      m.Add(metric::vgpu_gpu_unhealthy_transitions_total, l,
            static_cast<double>(health[i].unhealthy_transitions));
      for (const auto& [key, count] : health[i].events) {
        Labels el = l;
        el.emplace_back("event", key.substr(0, key.find(':')));
        el.emplace_back("code", key.substr(key.find(':') + 1));
        m.Add(metric::vgpu_gpu_health_events_total, el, static_cast<double>(count));
      }
    }
    if (i >= samples.size() || !samples[i].has_value()) continue;
    const device::DeviceSample& s = *samples[i];
    if (s.gpm.has_value()) AddGpmMetrics(m, l, *s.gpm);
    for (const device::MigGpmSample& g : s.mig_gpm) {
      for (const device::MigInstance& mi : state.MigInstances(d.index)) {
        if (mi.gi_id != g.gi_id || mi.ci_id < 0) continue;
        Labels il = l;
        il.emplace_back("GPU_I_PROFILE", mi.profile);
        il.emplace_back("GPU_I_ID", std::to_string(mi.gi_id));
        AddGpmMetrics(m, il, g.metrics);
        break;
      }
    }
    m.Add(metric::vgpu_gpu_memory_used_bytes, l, static_cast<double>(s.memory_used_bytes));
    m.Add(metric::vgpu_gpu_processes, l, static_cast<double>(s.processes.size()));
    auto opt = [&](const MetricDef& def, const auto& value) {
      if (value.has_value()) m.Add(def, l, static_cast<double>(*value));
    };
    opt(metric::vgpu_gpu_sm_utilization_ratio, s.sm_utilization);
    opt(metric::vgpu_gpu_memory_bandwidth_utilization_ratio, s.memory_bandwidth_utilization);
    opt(metric::vgpu_gpu_temperature_celsius, s.temperature_celsius);
    opt(metric::vgpu_gpu_memory_temperature_celsius, s.memory_temperature_celsius);
    opt(metric::vgpu_gpu_power_watts, s.power_watts);
    opt(metric::vgpu_gpu_power_limit_watts, s.power_limit_watts);
    opt(metric::vgpu_gpu_energy_joules_total, s.energy_joules_total);
    opt(metric::vgpu_gpu_sm_clock_hertz, s.sm_clock_hz);
    opt(metric::vgpu_gpu_memory_clock_hertz, s.memory_clock_hz);
    opt(metric::vgpu_gpu_encoder_utilization_ratio, s.encoder_utilization);
    opt(metric::vgpu_gpu_decoder_utilization_ratio, s.decoder_utilization);
    // Counters of corrected and uncorrected memory errors: one sample per type given.
    auto by_type = [&](const MetricDef& def, const std::optional<uint64_t>& corrected,
                       const std::optional<uint64_t>& uncorrected) {
      for (auto [type, value] : {std::pair{"corrected", corrected}, {"uncorrected", uncorrected}}) {
        if (!value.has_value()) continue;
        Labels tl = l;
        tl.emplace_back("type", type);
        m.Add(def, tl, static_cast<double>(*value));
      }
    };
    by_type(metric::vgpu_gpu_remapped_rows_total, s.remapped_rows_corrected_total,
            s.remapped_rows_uncorrected_total);
    if (s.row_remap_failed.has_value()) {
      m.Add(metric::vgpu_gpu_row_remap_failed, l, *s.row_remap_failed ? 1 : 0);
    }
    by_type(metric::vgpu_gpu_ecc_errors_total, s.ecc_corrected_errors_total,
            s.ecc_uncorrected_errors_total);
    opt(metric::vgpu_gpu_pcie_transmit_bytes_per_second, s.pcie_transmit_bytes_per_second);
    opt(metric::vgpu_gpu_pcie_receive_bytes_per_second, s.pcie_receive_bytes_per_second);
    opt(metric::vgpu_gpu_pcie_replay_errors_total, s.pcie_replay_errors_total);
    opt(metric::vgpu_gpu_nvlink_transmit_bytes_total, s.nvlink_transmit_bytes_total);
    opt(metric::vgpu_gpu_nvlink_receive_bytes_total, s.nvlink_receive_bytes_total);
    for (const device::NvLinkLinkSample& link : s.nvlink_links) {
      auto add = [&](const char* type, const std::optional<uint64_t>& v) {
        if (!v.has_value()) return;
        Labels ll = l;
        ll.emplace_back("link", std::to_string(link.link));
        ll.emplace_back("type", type);
        m.Add(metric::vgpu_gpu_nvlink_errors_total, ll, static_cast<double>(*v));
      };
      add("replay", link.replay_errors_total);
      add("recovery", link.recovery_errors_total);
      add("crc", link.crc_errors_total);
    }
  }
}

void AddSliceMetrics(MetricsBuilder& m, const MetricsSources& src) {
  const NodeState& state = *src.state;
  uint64_t now_ns = src.monotonic_now_ns;
  if (now_ns == 0) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now_ns =
        static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
  }
  const std::vector<SliceRecord> slices = src.slices->List();
  // Per GPU: what the slices were promised.
  std::map<std::string, double> mem_allocated, compute_allocated, slice_count;
  // (pod uid, container, gpu uuid) -> stats
  std::map<std::tuple<std::string, std::string, std::string>, SliceStats> stats;
  std::map<std::string, std::vector<const SliceRecord*>> by_pod;
  for (const SliceRecord& r : slices) {
    by_pod[r.spec.pod_uid].push_back(&r);
    for (size_t i = 0; i < r.spec.devices.size(); ++i) {
      const SliceDevice& d = r.spec.devices[i];
      mem_allocated[d.uuid] += static_cast<double>(d.memory_bytes);
      compute_allocated[d.uuid] += d.cores / 100.0;
      slice_count[d.uuid] += 1;
      SliceStats& st = stats[{r.spec.pod_uid, r.spec.container, d.uuid}];
      st.slice = &r;
      st.cuda_index = i;
    }
  }
  // Attribute the driver's processes to slices.
  std::map<std::string, std::map<std::string, std::string>> container_names;  // uid -> id -> name
  if (src.pods != nullptr) {
    for (const PodInfo& p : src.pods->Pods()) container_names[p.uid] = p.container_ids;
  }
  const auto samples = state.Samples();
  for (size_t i = 0; i < state.devices().size() && i < samples.size(); ++i) {
    if (!samples[i].has_value()) continue;
    const std::string& uuid = state.devices()[i].uuid;
    for (const device::ProcessUsage& p : samples[i]->processes) {
      auto owner = OwnerOfProcess(src.proc_root, p.pid);
      if (!owner) continue;
      std::string container;
      auto names = container_names.find(owner->pod_uid);
      if (names != container_names.end()) {
        auto n = names->second.find(owner->container_id);
        if (n != names->second.end()) container = n->second;
      }
      if (container.empty()) {
        // Without the container's name, a pod with one slice on this GPU still tells us.
        const SliceRecord* only = nullptr;
        int count = 0;
        for (const SliceRecord* r : by_pod[owner->pod_uid]) {
          for (const SliceDevice& d : r->spec.devices) {
            if (d.uuid == uuid) {
              only = r;
              ++count;
            }
          }
        }
        if (count != 1) continue;
        container = only->spec.container;
      }
      auto it = stats.find({owner->pod_uid, container, uuid});
      if (it == stats.end()) continue;
      it->second.used_bytes += static_cast<double>(p.used_memory_bytes);
      it->second.processes += 1;
      if (p.sm_utilization.has_value()) {
        it->second.sm_share += *p.sm_utilization;
        it->second.sm_known = true;
      }
    }
  }
  // The arbiters of the node's GPUs, in every arbiter directory a slice names.
  std::vector<std::string> uuids;
  for (const device::DeviceInfo& d : state.devices()) uuids.push_back(d.uuid);
  std::map<std::string, std::map<std::string, ArbiterUsage>> arbiters;  // dir -> uuid -> usage
  if (!src.arbiter_dir.empty()) arbiters[src.arbiter_dir] = ReadArbiters(src.arbiter_dir, uuids);
  for (const SliceRecord& r : slices) {
    if (!r.arbiter_dir.empty() && !arbiters.count(r.arbiter_dir)) {
      arbiters[r.arbiter_dir] = ReadArbiters(r.arbiter_dir, uuids);
    }
  }
  std::map<std::string, RegionUsage> regions;
  std::vector<std::string> region_paths;
  for (const SliceRecord& r : slices) {
    const int n = static_cast<int>(r.spec.devices.size());
    auto usage = src.regions != nullptr ? src.regions->Read(r.region_path, n)
                                        : ReadSliceRegion(r.region_path, n);
    if (usage) regions[r.name] = std::move(*usage);
    region_paths.push_back(r.region_path);
  }
  if (src.regions != nullptr) src.regions->Retain(region_paths);
  for (const auto& [key, st] : stats) {
    const SliceRecord& r = *st.slice;
    const SliceDevice& d = r.spec.devices[st.cuda_index];
    Labels base = {{"node", src.node_name},
                   {"namespace", r.spec.pod_ns},
                   {"pod", r.spec.pod_name},
                   {"container", r.spec.container}};
    Labels l = base;
    l.emplace_back("gpu", std::to_string(d.node_index));
    l.emplace_back("uuid", d.uuid);
    l.emplace_back("cuda_index", std::to_string(st.cuda_index));
    // A slice in a MIG instance: dcgm-exporter's MIG labels.
    for (const device::MigInstance& mi : state.MigInstances(d.node_index)) {
      if (mi.uuid.empty() || mi.uuid != d.uuid) continue;
      l.emplace_back("GPU_I_PROFILE", mi.profile);
      l.emplace_back("GPU_I_ID", std::to_string(mi.gi_id));
    }
    m.Add(metric::vgpu_slice_memory_limit_bytes, l, static_cast<double>(d.memory_bytes));
    m.Add(metric::vgpu_slice_memory_used_bytes, l, st.used_bytes);
    m.Add(metric::vgpu_slice_compute_limit_ratio, l, d.cores / 100.0);
    if (st.sm_known) {
      m.Add(metric::vgpu_slice_compute_utilization_ratio, l, st.sm_share);
    }
    m.Add(metric::vgpu_slice_processes, l, st.processes);
    auto region = regions.find(r.name);
    if (region != regions.end() && st.cuda_index < region->second.used_bytes.size()) {
      m.Add(metric::vgpu_slice_memory_charged_bytes, l,
            static_cast<double>(region->second.used_bytes[st.cuda_index]));
    }
    std::optional<double> idle_seconds;  // since the slice's last gated launch (its region)
    if (region != regions.end() && region->second.counters_read &&
        region->second.counters.counting) {
      const SliceCounterValues& c = region->second.counters;
      if (c.last_kernel_ns != 0) {
        idle_seconds =
            c.last_kernel_ns < now_ns ? static_cast<double>(now_ns - c.last_kernel_ns) / 1e9 : 0.0;
      }
      if (st.cuda_index < c.peak_bytes.size())
        AddSlicePeakMetric(m, l, c.peak_bytes[st.cuda_index]);
      // The slice's totals once: on its GPU's labels when it has one, else on the slice's.
      if (st.cuda_index == 0) AddSliceCounterMetrics(m, r.spec.devices.size() == 1 ? l : base, c);
    }
    const ArbiterUsage* arbiter = nullptr;
    auto dir = arbiters.find(r.arbiter_dir);
    if (dir != arbiters.end()) {
      auto gpu = dir->second.find(d.uuid);
      if (gpu != dir->second.end()) arbiter = &gpu->second;
    }
    AddSliceComputeMetrics(m, l, r, st.cuda_index, arbiter, idle_seconds);
  }
  for (const device::DeviceInfo& d : state.devices()) {
    Labels l = {{"node", src.node_name},
                {"gpu", std::to_string(d.index)},
                {"uuid", d.uuid},
                {"model", d.name}};
    m.Add(metric::vgpu_gpu_slices, l, slice_count[d.uuid]);
    m.Add(metric::vgpu_gpu_memory_allocated_bytes, l, mem_allocated[d.uuid]);
    m.Add(metric::vgpu_gpu_compute_allocated_ratio, l, compute_allocated[d.uuid]);
    auto node_arbiters = arbiters.find(src.arbiter_dir);
    if (node_arbiters != arbiters.end()) {
      auto a = node_arbiters->second.find(d.uuid);
      if (a != node_arbiters->second.end()) AddGpuComputeMetrics(m, l, a->second);
    }
  }
}

void AddDaemonMetrics(MetricsBuilder& m, const MetricsSources& src) {
  Labels l = {{"node", src.node_name}};
  Labels v = l;
  v.emplace_back("version", src.version);
  m.Add(metric::vgpu_node_build_info, v, 1);
  if (src.allocator != nullptr) {
    Labels ok = l, failed = l;
    ok.emplace_back("result", "ok");
    failed.emplace_back("result", "error");
    m.Add(metric::vgpu_node_allocations_total, ok,
          static_cast<double>(src.allocator->allocations_ok()));
    m.Add(metric::vgpu_node_allocations_total, failed,
          static_cast<double>(src.allocator->allocations_failed()));
    Labels hit = l, miss = l;
    hit.emplace_back("result", "assignment");
    miss.emplace_back("result", "none");
    m.Add(metric::vgpu_node_preferred_allocations_total, hit,
          static_cast<double>(src.allocator->preferences_matched()));
    m.Add(metric::vgpu_node_preferred_allocations_total, miss,
          static_cast<double>(src.allocator->preferences_unmatched()));
    for (auto [result, value] :
         {std::pair<const char*, uint64_t>{"ok", src.allocator->prestart_ok()},
          {"mismatch", src.allocator->prestart_mismatch()},
          {"unverified", src.allocator->prestart_unverified()}}) {
      Labels pl = l;
      pl.emplace_back("result", result);
      m.Add(metric::vgpu_node_prestart_checks_total, pl, static_cast<double>(value));
    }
    src.allocator->latency().AddTo(m, metric::vgpu_node_allocate_duration_seconds, l);
  }
  if (src.runner != nullptr) {
    m.Add(metric::vgpu_node_kubelet_registrations_total, l,
          static_cast<double>(src.runner->registrations()));
    m.Add(metric::vgpu_node_kubelet_registered, l, src.runner->registered() ? 1 : 0);
  }
  if (src.pods != nullptr) {
    m.Add(metric::vgpu_node_pod_lists_total, l, static_cast<double>(src.pods->lists()));
  }
  if (src.inventory != nullptr) {
    m.Add(metric::vgpu_node_inventory_patches_total, l,
          static_cast<double>(src.inventory->patches()));
  }
}

}  // namespace

std::string CollectMetrics(const MetricsSources& src) {
  MetricsBuilder m;
  AddGpuMetrics(m, src);
  AddSliceMetrics(m, src);
  AddDaemonMetrics(m, src);
  AddFaultMetrics(m, src.node_name, src.state->health().Snapshot(), src.tenants,
                  src.slices != nullptr ? src.slices->List() : std::vector<SliceRecord>{});
  if (src.hami_aliases) {
    AddHamiSeries(m, src.pods != nullptr ? src.pods->Pods() : std::vector<PodInfo>{});
  }
  if (src.dcgm_aliases) AddDcgmAliases(m);
  return m.Render();
}

}  // namespace vgpu::node
