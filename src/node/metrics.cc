#include "node/metrics.h"

#include <map>
#include <set>

#include "node/arbiter_usage.h"
#include "node/metrics_compute.h"
#include "node/metrics_faults.h"
#include "node/metrics_hami.h"
#include "node/metrics_telemetry.h"
#include "node/metrics_text.h"
#include "node/process_owner.h"
#include "node/slice_region.h"

namespace vgpu::node {
namespace {

constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kCounter = MetricType::kCounter;

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
    m.Add("vgpu_gpu_info", kGauge, "GPUs of this node (value 1), with their identity as labels",
          info, 1);
    m.Add("vgpu_gpu_memory_total_bytes", kGauge, "Device memory of the GPU", l,
          static_cast<double>(d.memory_total_bytes));
    if (d.sm_count > 0) {
      m.Add("vgpu_gpu_multiprocessors", kGauge, "Streaming multiprocessors (SMs) of the GPU", l,
            d.sm_count);
    }
    m.Add("vgpu_gpu_units", kGauge, "Shareable units the GPU is advertised as", l,
          state.units_per_gpu());
    {
      Labels ml = l;
      ml.emplace_back("mode", std::string(k8s::GpuModeName(state.Mode(d.index))));
      m.Add("vgpu_gpu_mode", kGauge,
            "The GPU's mode (value 1): shared, whole, mig, mig-dynamic, mps", ml, 1);
    }
    // One series per MIG instance, with dcgm-exporter's labels GPU_I_PROFILE and GPU_I_ID.
    for (const device::MigInstance& mi : state.MigInstances(d.index)) {
      if (mi.ci_id < 0) continue;
      Labels il = l;
      il.emplace_back("GPU_I_PROFILE", mi.profile);
      il.emplace_back("GPU_I_ID", std::to_string(mi.gi_id));
      il.emplace_back("mig_uuid", mi.uuid);
      il.emplace_back("start", std::to_string(mi.start));
      m.Add("vgpu_mig_instance_memory_total_bytes", kGauge, "Device memory of a MIG instance", il,
            static_cast<double>(mi.memory_bytes));
      m.Add("vgpu_mig_instance_multiprocessors", kGauge, "SMs of a MIG instance", il, mi.sm_count);
    }
    m.Add("vgpu_gpu_nvlink_peers", kGauge, "GPUs of this node reachable over an active NVLink", l,
          static_cast<double>(d.nvlink_peers.size()));
    bool healthy = i < health.size() ? health[i].healthy : true;
    m.Add("vgpu_gpu_healthy", kGauge, "1 when the GPU is advertised healthy to kubelet, else 0", l,
          healthy ? 1 : 0);
    if (i < health.size()) {
      m.Add("vgpu_gpu_unhealthy_transitions_total", kCounter,
            "Times the GPU went from healthy to unhealthy", l,
            static_cast<double>(health[i].unhealthy_transitions));
      for (const auto& [key, count] : health[i].events) {
        Labels el = l;
        el.emplace_back("event", key.substr(0, key.find(':')));
        el.emplace_back("code", key.substr(key.find(':') + 1));
        m.Add("vgpu_gpu_health_events_total", kCounter,
              "Health events reported by the driver (XID, ECC) or injected", el,
              static_cast<double>(count));
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
    m.Add("vgpu_gpu_memory_used_bytes", kGauge, "Device memory in use (driver's view)", l,
          static_cast<double>(s.memory_used_bytes));
    m.Add("vgpu_gpu_processes", kGauge, "Processes holding memory on the GPU", l,
          static_cast<double>(s.processes.size()));
    auto opt = [&](const char* name, MetricType type, const char* help, const auto& value) {
      if (value.has_value()) m.Add(name, type, help, l, static_cast<double>(*value));
    };
    opt("vgpu_gpu_sm_utilization_ratio", kGauge,
        "Share of the last sample period in which a kernel ran on the GPU", s.sm_utilization);
    opt("vgpu_gpu_memory_bandwidth_utilization_ratio", kGauge,
        "Share of the last sample period in which device memory was read or written",
        s.memory_bandwidth_utilization);
    opt("vgpu_gpu_temperature_celsius", kGauge, "GPU core temperature", s.temperature_celsius);
    opt("vgpu_gpu_power_watts", kGauge, "Power draw", s.power_watts);
    opt("vgpu_gpu_power_limit_watts", kGauge, "Enforced power limit", s.power_limit_watts);
    for (auto [type, value] : {std::pair{"corrected", s.ecc_corrected_errors_total},
                               std::pair{"uncorrected", s.ecc_uncorrected_errors_total}}) {
      if (!value.has_value()) continue;
      Labels el = l;
      el.emplace_back("type", type);
      m.Add("vgpu_gpu_ecc_errors_total", kCounter,
            "Memory errors over the GPU's life (the driver's aggregate ECC counters), by type", el,
            static_cast<double>(*value));
    }
    opt("vgpu_gpu_pcie_transmit_bytes_per_second", kGauge, "PCIe transmit throughput",
        s.pcie_transmit_bytes_per_second);
    opt("vgpu_gpu_pcie_receive_bytes_per_second", kGauge, "PCIe receive throughput",
        s.pcie_receive_bytes_per_second);
    opt("vgpu_gpu_pcie_replay_errors_total", kCounter, "PCIe replay (retransmission) events",
        s.pcie_replay_errors_total);
    opt("vgpu_gpu_nvlink_transmit_bytes_total", kCounter, "NVLink data transmitted, all links",
        s.nvlink_transmit_bytes_total);
    opt("vgpu_gpu_nvlink_receive_bytes_total", kCounter, "NVLink data received, all links",
        s.nvlink_receive_bytes_total);
    for (const device::NvLinkLinkSample& link : s.nvlink_links) {
      auto add = [&](const char* type, const std::optional<uint64_t>& v) {
        if (!v.has_value()) return;
        Labels ll = l;
        ll.emplace_back("link", std::to_string(link.link));
        ll.emplace_back("type", type);
        m.Add("vgpu_gpu_nvlink_errors_total", kCounter, "NVLink errors by link and kind", ll,
              static_cast<double>(*v));
      };
      add("replay", link.replay_errors_total);
      add("recovery", link.recovery_errors_total);
      add("crc", link.crc_errors_total);
    }
  }
}

void AddSliceMetrics(MetricsBuilder& m, const MetricsSources& src) {
  const NodeState& state = *src.state;
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
    m.Add("vgpu_slice_memory_limit_bytes", kGauge, "Memory limit of the slice on the GPU", l,
          static_cast<double>(d.memory_bytes));
    m.Add("vgpu_slice_memory_used_bytes", kGauge,
          "Device memory the slice's processes hold (driver's view, attributed by cgroup)", l,
          st.used_bytes);
    m.Add("vgpu_slice_compute_limit_ratio", kGauge,
          "Compute share configured for the slice (1 = the whole GPU)", l, d.cores / 100.0);
    if (st.sm_known) {
      m.Add("vgpu_slice_compute_utilization_ratio", kGauge,
            "Compute share the slice's processes achieved over the last sample period", l,
            st.sm_share);
    }
    m.Add("vgpu_slice_processes", kGauge, "Processes of the slice on the GPU (driver's view)", l,
          st.processes);
    auto region = regions.find(r.name);
    if (region != regions.end() && st.cuda_index < region->second.used_bytes.size()) {
      m.Add("vgpu_slice_memory_charged_bytes", kGauge,
            "Memory charged against the slice's limit in its accounting region (libvgpu's view)", l,
            static_cast<double>(region->second.used_bytes[st.cuda_index]));
    }
    if (region != regions.end() && region->second.counters_read &&
        region->second.counters.counting) {
      const SliceCounterValues& c = region->second.counters;
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
    AddSliceComputeMetrics(m, l, r, st.cuda_index, arbiter);
  }
  for (const device::DeviceInfo& d : state.devices()) {
    Labels l = {{"node", src.node_name},
                {"gpu", std::to_string(d.index)},
                {"uuid", d.uuid},
                {"model", d.name}};
    m.Add("vgpu_gpu_slices", kGauge, "Slices (containers) placed on the GPU", l,
          slice_count[d.uuid]);
    m.Add("vgpu_gpu_memory_allocated_bytes", kGauge, "Sum of the memory limits of the slices", l,
          mem_allocated[d.uuid]);
    m.Add("vgpu_gpu_compute_allocated_ratio", kGauge,
          "Sum of the compute shares of the slices (1 = the whole GPU)", l,
          compute_allocated[d.uuid]);
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
  m.Add("vgpu_node_build_info", kGauge, "The running vgpu node daemon (value 1)", v, 1);
  if (src.allocator != nullptr) {
    Labels ok = l, failed = l;
    ok.emplace_back("result", "ok");
    failed.emplace_back("result", "error");
    m.Add("vgpu_node_allocations_total", kCounter, "Allocate calls by result", ok,
          static_cast<double>(src.allocator->allocations_ok()));
    m.Add("vgpu_node_allocations_total", kCounter, "Allocate calls by result", failed,
          static_cast<double>(src.allocator->allocations_failed()));
    Labels hit = l, miss = l;
    hit.emplace_back("result", "assignment");
    miss.emplace_back("result", "none");
    m.Add("vgpu_node_preferred_allocations_total", kCounter,
          "GetPreferredAllocation answers: the scheduler's units, or no preference", hit,
          static_cast<double>(src.allocator->preferences_matched()));
    m.Add("vgpu_node_preferred_allocations_total", kCounter,
          "GetPreferredAllocation answers: the scheduler's units, or no preference", miss,
          static_cast<double>(src.allocator->preferences_unmatched()));
    const char* help = "PreStartContainer checks against kubelet's PodResources API by result";
    for (auto [result, value] :
         {std::pair<const char*, uint64_t>{"ok", src.allocator->prestart_ok()},
          {"mismatch", src.allocator->prestart_mismatch()},
          {"unverified", src.allocator->prestart_unverified()}}) {
      Labels pl = l;
      pl.emplace_back("result", result);
      m.Add("vgpu_node_prestart_checks_total", kCounter, help, pl, static_cast<double>(value));
    }
    src.allocator->latency().AddTo(m, "vgpu_node_allocate_duration_seconds",
                                   "Time to answer one container's Allocate", l);
  }
  if (src.runner != nullptr) {
    m.Add("vgpu_node_kubelet_registrations_total", kCounter,
          "Successful registrations with kubelet (one more per kubelet restart)", l,
          static_cast<double>(src.runner->registrations()));
    m.Add("vgpu_node_kubelet_registered", kGauge, "1 while registered with kubelet", l,
          src.runner->registered() ? 1 : 0);
  }
  if (src.pods != nullptr) {
    m.Add("vgpu_node_pod_lists_total", kCounter, "Pod lists fetched from the API server", l,
          static_cast<double>(src.pods->lists()));
  }
  if (src.inventory != nullptr) {
    m.Add("vgpu_node_inventory_patches_total", kCounter,
          "Times the GPU inventory annotation was written", l,
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
