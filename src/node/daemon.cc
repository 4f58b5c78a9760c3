#include "node/daemon.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "common/clock.h"
#include "common/log.h"
#include "node/arbiter_usage.h"
#include "node/metrics/metrics.h"
#include "node/modes/mig_tenant.h"
#include "node/plugin/unit_id.h"
#include "node/rules/online_analysis.h"
#include "node/rules/rule_engine.h"
#include "node/slice_control.h"

namespace vgpu::node {
namespace {

int64_t NowNs() { return MonotonicClock::Instance().NowNanos(); }

}  // namespace

Daemon::Daemon(DaemonOptions options, std::unique_ptr<device::DeviceBackend> backend,
               ClusterClient* cluster, device::InjectingBackend* injector)
    : options_(std::move(options)),
      backend_(std::move(backend)),
      cluster_(cluster),
      injector_(injector),
      slices_(options_.slices) {}

Daemon::~Daemon() { Stop(); }

Status Daemon::Start() {
  auto devices = backend_->Discover();
  if (!devices) return devices.error().WithContext("GPU discovery");
  if (devices->empty()) return Status::FailedPrecondition("no GPU found on this node");
  {
    std::vector<int> present;
    for (const device::DeviceInfo& d : *devices) present.push_back(d.index);
    VGPU_RETURN_IF_ERROR(CheckGpuModeDevices(options_.gpu_modes, present));
  }
  VGPU_LOG_INFO("%s: %zu GPU(s), %d units each", backend_->Describe().c_str(), devices->size(),
                options_.units_per_gpu);
  state_ =
      std::make_unique<NodeState>(std::move(*devices), options_.units_per_gpu, options_.health);
  // The topology, for the inventory's `links` rows (docs/topology.md); optional.
  if (auto topology = backend_->ReadTopology();
      topology && topology->size() == static_cast<int>(state_->devices().size())) {
    std::vector<std::vector<std::string>> rows(topology->size());
    for (int a = 0; a < topology->size(); ++a) {
      for (int b = 0; b < topology->size(); ++b) rows[a].push_back(topology->Token(a, b));
    }
    state_->SetTopologyRows(std::move(rows));
    if (topology->pcie_from_driver) {
      state_->SetPcieLink(topology->pcie_generation, topology->pcie_width);
    }
  } else if (!topology) {
    VGPU_LOG_INFO("GPU topology unknown: %s", topology.error().message().c_str());
  }
  pods_ = std::make_unique<PodSync>(cluster_, options_.node_name, &store_);
  // A pause lease outlives three sampling rounds: a daemon that stops renewing it releases it.
  quarantine_ = std::make_unique<SliceQuarantine>(
      &slices_, cluster_, options_.node_name, options_.proc_root,
      std::max<int64_t>(2'000'000'000LL, 3LL * options_.sample_interval_ms * 1'000'000LL), NowNs);
  tenants_ = std::make_unique<faults::TenantLevels>(options_.tenant_levels, quarantine_.get());
  allocator_ = std::make_unique<Allocator>(state_.get(), &store_, pods_.get(), &slices_);
  allocator_->SetSpillAdmission(options_.spill, options_.proc_root + "/meminfo");
  allocator_->SetDeviceList(options_.device_list);
  if (options_.observe_only) {
    Status listed = pods_->Refresh();
    if (!listed.ok()) VGPU_LOG_WARN("%s", listed.ToString().c_str());
    SampleNow();
    return Status::Ok();
  }
  VGPU_RETURN_IF_ERROR(slices_.Init());
  VGPU_RETURN_IF_ERROR(StartRules());
  VGPU_RETURN_IF_ERROR(StartAnalysis());
  Status modes = SetUpModes();
  if (!modes.ok()) return modes;
  if (!options_.slices.arbiter_dir.empty()) {
    std::vector<std::string> uuids;
    for (const device::DeviceInfo& d : state_->devices()) uuids.push_back(d.uuid);
    // Not fatal: libvgpu.so creates a missing arbiter at its first gated launch.
    Status arbiters = CreateArbiters(options_.slices.arbiter_dir, uuids);
    if (!arbiters.ok()) VGPU_LOG_WARN("%s", arbiters.ToString().c_str());
  }
  if (!options_.pod_resources_socket.empty()) {
    pod_resources_ = NewKubeletPodResources(options_.pod_resources_socket);
    allocator_->SetPodResources(pod_resources_.get(), options_.plugin.resource_name);
    options_.plugin.pre_start_required = true;
  }
  inventory_ = std::make_unique<InventoryPublisher>(cluster_, options_.node_name,
                                                    options_.plugin.resource_name);
  // Assignments first, so that slices surviving a restart keep their containers allocated.
  for (const SliceRecord& r : slices_.List()) {
    std::vector<std::string> units;
    for (const SliceDevice& d : r.spec.devices) {
      // A MIG device's slice names the instance; kubelet's units are its parent GPU's.
      const bool mig = d.uuid.rfind("MIG-", 0) == 0 && d.node_index >= 0 &&
                       d.node_index < static_cast<int>(state_->devices().size());
      if (d.unit < 0) {
        units.push_back(d.uuid);  // an instance of NVIDIA's MIG resources: kubelet's unit
      } else {
        units.push_back(MakeUnitId(mig ? state_->devices()[d.node_index].uuid : d.uuid, d.unit));
      }
    }
    store_.Restore(r.spec.pod_uid, r.spec.container, units);
  }
  if (options_.watch_pods) {
    Status watching = cluster_->WatchPodsOnNode(
        options_.node_name, [this](std::vector<PodInfo> pods) { pods_->Apply(std::move(pods)); });
    if (watching.ok()) {
      watching_ = true;
      VGPU_LOG_INFO("watching the pods of node %s", options_.node_name.c_str());
    }
  }
  // The watch's first list has filled the store; without one, list now.
  if (!watching_ || !cluster_->WatchingPods()) {
    Status listed = pods_->Refresh();
    if (!listed.ok()) VGPU_LOG_WARN("%s; will retry", listed.ToString().c_str());
  }
  SampleNow();
  runner_ = std::make_unique<PluginRunner>(options_.plugin, state_.get(), allocator_.get());
  VGPU_RETURN_IF_ERROR(runner_->Start());
  // NVIDIA's MIG resources: one plugin per profile of the static layouts, beside the units.
  for (const std::string& profile : state_->StaticMigProfiles()) {
    auto runner = std::make_unique<PluginRunner>(MigPluginOptions(options_.plugin, profile),
                                                 state_.get(), allocator_.get());
    Status started = runner->Start();
    if (!started.ok()) {
      for (auto& r : mig_runners_) r->Stop();
      mig_runners_.clear();
      runner_->Stop();
      return started.WithContext("MIG resource " + profile);
    }
    mig_runners_.push_back(std::move(runner));
  }
  if (!options_.metrics_listen.empty()) {
    metrics_ = std::make_unique<MetricsServer>([this] { return Metrics(); },
                                               [this] {
                                                 for (const auto& r : mig_runners_) {
                                                   if (!r->registered()) return false;
                                                 }
                                                 return runner_->registered();
                                               });
    if (injector_ != nullptr) {
      metrics_->SetInjector([this](const MetricsServer::InjectRequest& r) { return Inject(r); });
    }
    Status s = metrics_->Start(options_.metrics_listen);
    if (!s.ok()) {
      for (auto& r : mig_runners_) r->Stop();
      runner_->Stop();
      return s.WithContext("--metrics-listen");
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
    started_ = true;
  }
  threads_.emplace_back([this] { HealthLoop(); });
  threads_.emplace_back([this] { SampleLoop(); });
  threads_.emplace_back([this] { HousekeepingLoop(); });
  if (rules_) threads_.emplace_back([this] { RulesLoop(); });
  return Status::Ok();
}

Status Daemon::SetUpModes() {
  mps_ = std::make_unique<MpsManager>(options_.mps, backend_.get());
  std::set<int> assigned;  // GPUs with container slices that survived a restart
  for (const SliceRecord& r : slices_.List()) {
    for (const SliceDevice& d : r.spec.devices) assigned.insert(d.node_index);
  }
  mode_outcomes_ =
      SetUpGpuModes(backend_.get(), state_.get(), options_.gpu_modes, mps_.get(), assigned);
  allocator_->SetMps(mps_.get());
  std::vector<int> dynamic;
  for (const GpuModeOutcome& o : mode_outcomes_) {
    if (o.mode == GpuMode::kMigDynamic) dynamic.push_back(o.index);
  }
  if (dynamic.empty()) return Status::Ok();
  std::string journal = options_.mig_journal;
  if (journal.empty()) {
    std::string root = options_.slices.root;
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    journal = root.substr(0, root.rfind('/') == 0 ? 1 : root.rfind('/')) + "/mig-claims";
  }
  mig_ = std::make_unique<MigManager>(backend_.get(), journal);
  Status recovered = mig_->Recover(dynamic);
  if (!recovered.ok()) return recovered.WithContext("MIG recovery (" + journal + ")");
  allocator_->SetMigManager(mig_.get());
  allocator_->SetMigChanged([this] {
    RefreshMigInstances(backend_.get(), state_.get());
    inventory_dirty_.store(true);
  });
  RefreshMigInstances(backend_.get(), state_.get());
  return Status::Ok();
}

void Daemon::Stop() {
  // First, and even when Start() failed halfway: the watch calls into pods_.
  if (watching_.exchange(false)) cluster_->StopWatchingPods();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) return;
    started_ = false;
    stop_ = true;
  }
  cv_.notify_all();
  if (state_) state_->Stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  if (metrics_) metrics_->Stop();
  for (auto& r : mig_runners_) r->Stop();
  if (runner_) runner_->Stop();
}

bool Daemon::WaitStop(int ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return stop_; });
}

void Daemon::OnHealthChanged() {
  state_->NotifyChanged();
  inventory_dirty_.store(true);
  cv_.notify_all();
}

void Daemon::HealthLoop() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    std::vector<device::HealthEvent> events = backend_->WaitForEvents(500);
    bool changed = false;
    for (const device::HealthEvent& e : events) {
      VGPU_LOG_INFO("health event on %s: %s %llu %s", e.uuid.empty() ? "all GPUs" : e.uuid.c_str(),
                    device::HealthEventKindName(e.kind), static_cast<unsigned long long>(e.code),
                    e.description.c_str());
      const bool mig_attributed = e.kind == device::HealthEvent::Kind::kXid && e.pid == 0 &&
                                  e.gpu_instance_id != device::HealthEvent::kNoInstance &&
                                  AttributeMigXid(e);
      changed |= state_->health().OnEvent(e, NowNs(), mig_attributed);
      if (e.kind == device::HealthEvent::Kind::kXid && e.pid != 0) AttributeXid(e);
    }
    changed |= state_->health().Tick(NowNs());
    if (changed) OnHealthChanged();
    RunHealthActions();
  }
}

void Daemon::RunHealthActions() {
  std::lock_guard<std::mutex> serial(health_actions_mu_);
  // A reset leads to a probe, a probe to a state change: a few rounds drain the chain.
  for (int round = 0; round < 8; ++round) {
    std::vector<faults::HealthAction> actions = state_->health().TakeActions();
    if (actions.empty()) return;
    bool changed = false;
    for (const faults::HealthAction& a : actions) {
      const device::DeviceInfo* d = state_->FindByUuid(a.key.uuid);
      const int index = d != nullptr ? d->index : -1;
      switch (a.kind) {
        case faults::HealthActionKind::kNotify: {
          const bool good = a.to == faults::GpuState::kHealthy;
          if (good) {
            VGPU_LOG_INFO("GPU %s: %s", a.key.ToString().c_str(), a.message.c_str());
          } else {
            VGPU_LOG_WARN("GPU %s: %s", a.key.ToString().c_str(), a.message.c_str());
          }
          if (!options_.observe_only) {
            static const char* const kReasons[] = {"GpuHealthy", "GpuSuspect", "GpuQuarantined",
                                                   "GpuResetPending", "GpuProbation"};
            Status s = cluster_->PostNodeEvent(options_.node_name, good ? "Normal" : "Warning",
                                               kReasons[static_cast<int>(a.to)],
                                               "GPU " + a.key.ToString() + ": " + a.message);
            if (!s.ok()) VGPU_LOG_WARN("node event: %s", s.ToString().c_str());
          }
          break;
        }
        case faults::HealthActionKind::kReset: {
          Status s = !a.key.whole_gpu()
                         ? Status::FailedPrecondition(
                               "a MIG instance is recovered by recreating it, not by the node")
                     : options_.observe_only ? Status::FailedPrecondition("observe only")
                                             : backend_->Reset(index);
          VGPU_LOG_INFO("reset of GPU %s: %s", a.key.ToString().c_str(), s.ToString().c_str());
          changed |= state_->health().OnResetResult(a.key, s.ok(), s.message(), NowNs());
          break;
        }
        case faults::HealthActionKind::kProbe: {
          Status s = backend_->Probe(index);
          VGPU_LOG_INFO("probe of GPU %s: %s", a.key.ToString().c_str(), s.ToString().c_str());
          changed |= state_->health().OnProbeResult(a.key, s.ok(), s.message(), NowNs());
          break;
        }
      }
    }
    if (changed) OnHealthChanged();
  }
}

void Daemon::SampleNow() {
  bool changed = false;
  const uint32_t self = static_cast<uint32_t>(getpid());
  for (const device::DeviceInfo& d : state_->devices()) {
    auto sample = backend_->Sample(d.index);
    // The daemon's own recovery probe does not hold the GPU against its reset.
    const int processes = sample
                              ? static_cast<int>(std::count_if(
                                    sample->processes.begin(), sample->processes.end(),
                                    [&](const device::ProcessUsage& p) { return p.pid != self; }))
                              : -1;
    changed |= state_->health().OnSample(
        d.uuid, sample.has_value(), sample ? "" : sample.error().message(), NowNs(), processes);
    if (sample) changed |= CheckRunningKernel(d.uuid, sample->running_kernel);
    state_->StoreSample(d.index, sample ? std::optional(std::move(*sample)) : std::nullopt);
  }
  changed |= state_->health().Tick(NowNs());
  if (changed) OnHealthChanged();
  RunHealthActions();
  if (!options_.observe_only) TenantRound();
}

std::optional<std::string> Daemon::SliceOfHostPid(uint32_t host_pid, std::string* why) const {
  auto id = IdentityOfHostPid(options_.proc_root, host_pid);
  if (!id) {
    *why = "pid " + std::to_string(host_pid) + " is gone";
    return std::nullopt;
  }
  for (const SliceRecord& r : slices_.List()) {
    auto view = ReadSliceControl(r.region_path);
    if (!view) continue;
    for (const SliceProcess& p : view->processes) {
      if (p.pid == id->pid && p.pid_ns == id->pid_ns) return r.name;
    }
  }
  *why = "pid " + std::to_string(host_pid) + " is not a process of a slice";
  return std::nullopt;
}

void Daemon::AttributeXid(const device::HealthEvent& e) {
  faults::XidClass cls = state_->health().ClassOf(e.uuid, e.code);
  if (faults::IsFatal(cls)) return;  // the GPU's business
  std::string why;
  if (auto slice = SliceOfHostPid(e.pid, &why)) {
    TenantSignal(*slice, faults::TenantSignal::kXid, 1,
                 "XID " + std::to_string(e.code) + " of pid " + std::to_string(e.pid));
    return;
  }
  VGPU_LOG_INFO("XID %llu: %s", static_cast<unsigned long long>(e.code), why.c_str());
}

bool Daemon::AttributeMigXid(const device::HealthEvent& e) {
  faults::XidClass cls = state_->health().ClassOf(e.uuid, e.code);
  if (faults::IsFatal(cls)) return false;  // the instance's business
  const device::DeviceInfo* gpu = state_->FindByUuid(e.uuid);
  if (gpu == nullptr) return false;
  const std::string mig_uuid =
      MigInstanceUuid(state_->MigInstances(gpu->index), e.gpu_instance_id, e.compute_instance_id);
  std::vector<MigClaim> claims;
  if (mig_ != nullptr) claims = mig_->Claims();
  std::string why;
  auto slice =
      OnlyTenantOfMigInstance(slices_.List(), mig_ != nullptr ? &claims : nullptr, mig_uuid, &why);
  const std::string what = "XID " + std::to_string(e.code) + " on MIG instance gi" +
                           std::to_string(e.gpu_instance_id) + " of " + e.uuid;
  if (!slice) {
    VGPU_LOG_INFO("%s: not attributed (%s)", what.c_str(), why.c_str());
    return false;
  }
  TenantSignal(*slice, faults::TenantSignal::kXid, 1, what + " (its only tenant)");
  return true;
}

bool Daemon::CheckRunningKernel(const std::string& uuid,
                                const std::optional<device::DeviceSample::RunningKernel>& k) {
  const int64_t deadline_ns = options_.health.kernel_deadline_ms * 1'000'000LL;
  std::lock_guard<std::mutex> lock(stuck_mu_);
  if (deadline_ns <= 0 || !k || k->running_ns < deadline_ns) {
    stuck_kernels_.erase(uuid);
    return false;
  }
  // The same kernel as last round: the same process, and it has not run for less time since.
  auto it = stuck_kernels_.find(uuid);
  const bool first =
      it == stuck_kernels_.end() || it->second.first != k->pid || k->running_ns < it->second.second;
  stuck_kernels_[uuid] = {k->pid, k->running_ns};
  const std::string what = "a kernel of pid " + std::to_string(k->pid) + " has run for " +
                           std::to_string(k->running_ns / 1'000'000) + " ms (deadline " +
                           std::to_string(options_.health.kernel_deadline_ms) + " ms)";
  if (first && !options_.observe_only) {
    std::string why;
    if (auto slice = SliceOfHostPid(k->pid, &why)) {
      TenantSignal(*slice, faults::TenantSignal::kStuckKernel, 1, what + " on " + uuid);
    } else {
      VGPU_LOG_INFO("stuck kernel on %s: %s", uuid.c_str(), why.c_str());
    }
  }
  return state_->health().OnStuckKernel(uuid, what, first, NowNs());
}

void Daemon::TenantSignal(const std::string& slice, faults::TenantSignal signal, int count,
                          const std::string& what) {
  std::lock_guard<std::mutex> lock(tenant_mu_);
  tenants_->OnSignal(slice, signal, count, what, NowNs());
}

std::vector<faults::TenantStatus> Daemon::Tenants() const {
  std::lock_guard<std::mutex> lock(tenant_mu_);
  return tenants_ ? tenants_->Snapshot() : std::vector<faults::TenantStatus>{};
}

void Daemon::TenantRound() {
  const int64_t now = NowNs();
  std::vector<SliceRecord> records = slices_.List();
  // Host-link receive rates of the GPUs, for the thrash of spilling slices.
  std::map<std::string, double> rx_by_gpu;
  {
    std::vector<std::optional<device::DeviceSample>> samples = state_->Samples();
    const std::vector<device::DeviceInfo>& devices = state_->devices();
    for (size_t i = 0; i < devices.size() && i < samples.size(); ++i) {
      if (samples[i] && samples[i]->pcie_receive_bytes_per_second) {
        rx_by_gpu[devices[i].uuid] = *samples[i]->pcie_receive_bytes_per_second;
      }
    }
  }
  std::vector<SpillSliceState> spill;
  std::lock_guard<std::mutex> lock(tenant_mu_);
  std::set<std::string> live;
  for (const SliceRecord& r : records) {
    live.insert(r.name);
    auto view = ReadSliceControl(r.region_path);
    if (!view) continue;
    SpillSliceState st;
    st.slice = r.name;
    st.spilling =
        view->memory_mode == kRegionModeSpill && !view->protected_slice && view->spilled_bytes > 0;
    st.spilled_bytes = view->spilled_bytes;
    for (const SliceDevice& d : r.spec.devices) st.gpus.push_back(d.uuid);
    spill.push_back(std::move(st));
    tenants_->OnCounters(r.name, view->launch_failures, view->oom_refusals, now);
    uint64_t used = 0, limit = 0;
    double worst = -1;
    for (size_t i = 0; i < view->used_bytes.size(); ++i) {
      if (view->limit_bytes[i] == 0) continue;
      double ratio = static_cast<double>(view->used_bytes[i]) / view->limit_bytes[i];
      if (ratio > worst) {
        worst = ratio;
        used = view->used_bytes[i];
        limit = view->limit_bytes[i];
      }
    }
    tenants_->OnMemory(r.name, used, limit, now);
  }
  if (!thrash_) thrash_ = std::make_unique<SpillThrash>(options_.thrash);
  for (const ThrashSignal& t : thrash_->Round(rx_by_gpu, spill)) {
    tenants_->OnSignal(t.slice, faults::TenantSignal::kThrash, 1, t.what, now);
  }
  tenants_->Tick(now);
  for (const faults::TenantStatus& t : tenants_->Snapshot()) {
    if (!live.count(t.slice)) {
      tenants_->Forget(t.slice);
      continue;
    }
    for (const SliceRecord& r : records) {
      if (r.name != t.slice) continue;
      SliceControlUpdate u;
      u.level = static_cast<uint32_t>(t.level);
      (void)WriteSliceControl(r.region_path, u);
    }
  }
}

void Daemon::SampleLoop() {
  while (!WaitStop(options_.sample_interval_ms)) SampleNow();
}

void Daemon::HousekeepNow() {
  if (options_.observe_only) {
    Status listed = pods_->Refresh();
    if (!listed.ok()) VGPU_LOG_WARN("%s", listed.ToString().c_str());
    return;
  }
  // A live watch keeps the pods current; listing is for when there is none (or it has not
  // listed yet).
  Status s = watching_ && cluster_->WatchingPods() ? Status::Ok() : pods_->Refresh();
  if (!s.ok()) {
    VGPU_LOG_WARN("%s", s.ToString().c_str());
  } else {
    std::set<std::string> live;
    for (const PodInfo& p : pods_->Pods()) {
      if (!p.Terminated()) live.insert(p.uid);
    }
    for (const SliceRecord& r : slices_.CollectGarbage(
             live, static_cast<int64_t>(std::time(nullptr)), options_.slice_grace_seconds)) {
      VGPU_LOG_INFO("removed slice %s of %s/%s (pod gone)", r.name.c_str(), r.spec.pod_ns.c_str(),
                    r.spec.pod_name.c_str());
    }
    // MIG instances of pods that are gone (their processes have exited with the pod).
    if (mig_ != nullptr) {
      if (mig_->ReleaseGone(live) > 0) inventory_dirty_.store(true);
    }
  }
  if (mig_ != nullptr || !options_.gpu_modes.entries.empty()) {
    RefreshMigInstances(backend_.get(), state_.get());
  }
  // Always: Publish() patches only a changed text, so this costs nothing when nothing changed,
  // and on return the annotation holds the current inventory even if the loop was publishing
  // an older one at the same moment (it had already taken the dirty flag).
  inventory_dirty_.store(false);
  Status p = inventory_->Publish(*state_);
  if (!p.ok()) {
    VGPU_LOG_WARN("%s; will retry", p.ToString().c_str());
    inventory_dirty_.store(true);
  }
}

void Daemon::HousekeepingLoop() {
  auto next_refresh = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, next_refresh, [&] { return stop_ || inventory_dirty_.load(); });
      if (stop_) return;
    }
    if (std::chrono::steady_clock::now() >= next_refresh) {
      HousekeepNow();
      next_refresh =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.pod_refresh_ms);
    } else if (inventory_dirty_.exchange(false)) {
      Status p = inventory_->Publish(*state_);
      if (!p.ok()) {
        VGPU_LOG_WARN("%s; will retry", p.ToString().c_str());
        // Retried at the next refresh; do not spin on a failing API server.
        inventory_dirty_.store(true);
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_until(lock, next_refresh, [&] { return stop_; });
      }
    }
  }
}

std::string Daemon::Metrics() const {
  MetricsSources src;
  src.state = state_.get();
  src.slices = &slices_;
  src.pods = pods_.get();
  src.allocator = allocator_.get();
  src.runner = runner_.get();
  src.inventory = inventory_.get();
  src.node_name = options_.node_name;
  src.proc_root = options_.proc_root;
  src.arbiter_dir = options_.slices.arbiter_dir;
  src.version = options_.version;
  src.hami_aliases = options_.hami_aliases;
  src.dcgm_aliases = options_.dcgm_aliases;
  src.health_events = backend_->SupportsEvents();
  src.regions = &regions_;
  src.tenants = Tenants();
  return CollectMetrics(src) + RulesMetrics() + AnalysisMetrics();
}

Status Daemon::CheckInjectedInstance(const device::DeviceInfo& gpu, uint32_t gi,
                                     uint32_t ci) const {
  constexpr uint32_t kNone = device::HealthEvent::kNoInstance;
  const std::string where = "GPU " + std::to_string(gpu.index);
  if (gi == kNone || ci == kNone) {
    return Status::InvalidArgument("gi and ci: a MIG instance needs both (" + where + ")");
  }
  const GpuMode mode = state_->Mode(gpu.index);
  if (mode != GpuMode::kMig && mode != GpuMode::kMigDynamic) {
    return Status::InvalidArgument("gi=" + std::to_string(gi) + "&ci=" + std::to_string(ci) + ": " +
                                   where + " is in mode " + std::string(GpuModeName(mode)) +
                                   ", it has no MIG instances");
  }
  // The driver's instances now (the daemon's view may lag one just created).
  Result<std::vector<device::MigInstance>> instances = backend_->MigInstances(gpu.index);
  if (!instances) return instances.error().WithContext(where);
  std::string have;
  for (const device::MigInstance& m : *instances) {
    if (m.ci_id < 0) continue;
    if (static_cast<uint32_t>(m.gi_id) == gi && static_cast<uint32_t>(m.ci_id) == ci) {
      return Status::Ok();
    }
    have += (have.empty() ? "" : ", ") +
            ("gi" + std::to_string(m.gi_id) + "/ci" + std::to_string(m.ci_id));
  }
  return Status::InvalidArgument(
      "gi=" + std::to_string(gi) + "&ci=" + std::to_string(ci) + ": " + where +
      " has no such MIG instance (it has: " + (have.empty() ? "none" : have) + ")");
}

Status Daemon::Inject(const MetricsServer::InjectRequest& r) {
  if (injector_ == nullptr) return Status::FailedPrecondition("fault injection is off");
  const std::string& gpu = r.gpu;
  const std::string& event = r.event;
  const uint64_t code = r.code;
  const device::DeviceInfo* target = state_->FindByUuid(gpu);
  if (target == nullptr && !gpu.empty() &&
      gpu.find_first_not_of("0123456789") == std::string::npos && gpu.size() < 4) {
    size_t index = std::stoul(gpu);
    if (index < state_->devices().size()) target = &state_->devices()[index];
  }
  if (target == nullptr) {
    return Status::InvalidArgument("gpu: \"" + gpu + "\" is neither a UUID nor an index here");
  }
  constexpr uint32_t kNone = device::HealthEvent::kNoInstance;
  if (r.gpu_instance != kNone || r.compute_instance != kNone) {
    // A MIG instance of this GPU, as the driver would name it: never one that does not exist
    // (its health state would outlive every recovery of the GPU).
    Status s = CheckInjectedInstance(*target, r.gpu_instance, r.compute_instance);
    if (!s.ok()) return s;
  }
  device::HealthEvent e;
  e.uuid = target->uuid;
  e.code = code;
  e.pid = r.pid;
  e.gpu_instance_id = r.gpu_instance;
  e.compute_instance_id = r.compute_instance;
  if (event == "xid") {
    e.kind = device::HealthEvent::Kind::kXid;
    e.description = "injected XID " + std::to_string(code);
  } else if (event == "ecc-dbe") {
    e.kind = device::HealthEvent::Kind::kDoubleBitEcc;
    e.description = "injected double-bit ECC error";
  } else if (event == "recovery-action") {
    if (code > 5) return Status::InvalidArgument("code: a recovery action is 0..5");
    e.kind = device::HealthEvent::Kind::kRecoveryAction;
    e.description = "injected recovery action " + std::to_string(code);
  } else if (event == "recovered") {
    e.kind = device::HealthEvent::Kind::kRecovered;
    e.description = "injected recovery";
    injector_->SetLost(target->uuid, false);
  } else if (event == "lost") {
    injector_->SetLost(target->uuid, true);
    return Status::Ok();
  } else if (event == "found") {
    injector_->SetLost(target->uuid, false);
    return Status::Ok();
  } else if (event == "stuck-kernel") {
    return injector_->InjectStuckKernel(target->uuid, r.pid);
  } else if (event == "unstuck") {
    return injector_->ClearStuckKernel(target->uuid);
  } else {
    return Status::InvalidArgument(
        "event: \"" + event +
        "\" is not one of xid, ecc-dbe, recovery-action, recovered, lost, found, stuck-kernel, "
        "unstuck");
  }
  injector_->InjectEvent(std::move(e));
  return Status::Ok();
}

}  // namespace vgpu::node
