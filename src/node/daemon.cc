#include "node/daemon.h"

#include <ctime>
#include <set>

#include "common/clock.h"
#include "common/log.h"
#include "node/arbiter_usage.h"
#include "node/metrics.h"
#include "node/unit_id.h"

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
  } else if (!topology) {
    VGPU_LOG_INFO("GPU topology unknown: %s", topology.error().message().c_str());
  }
  pods_ = std::make_unique<PodSync>(cluster_, options_.node_name, &store_);
  allocator_ = std::make_unique<Allocator>(state_.get(), &store_, pods_.get(), &slices_);
  allocator_->SetDeviceList(options_.device_list);
  if (options_.observe_only) {
    Status listed = pods_->Refresh();
    if (!listed.ok()) VGPU_LOG_WARN("%s", listed.ToString().c_str());
    SampleNow();
    return Status::Ok();
  }
  VGPU_RETURN_IF_ERROR(slices_.Init());
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
    for (const SliceDevice& d : r.spec.devices) units.push_back(MakeUnitId(d.uuid, d.unit));
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
  if (!options_.metrics_listen.empty()) {
    metrics_ = std::make_unique<MetricsServer>([this] { return Metrics(); },
                                               [this] { return runner_->registered(); });
    if (injector_ != nullptr) {
      metrics_->SetInjector([this](const std::string& gpu, const std::string& event,
                                   uint64_t code) { return Inject(gpu, event, code); });
    }
    Status s = metrics_->Start(options_.metrics_listen);
    if (!s.ok()) {
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
      changed |= state_->health().OnEvent(e, NowNs());
    }
    changed |= state_->health().Tick(NowNs());
    if (changed) OnHealthChanged();
  }
}

void Daemon::SampleNow() {
  bool changed = false;
  for (const device::DeviceInfo& d : state_->devices()) {
    auto sample = backend_->Sample(d.index);
    changed |= state_->health().OnSample(d.uuid, sample.has_value(),
                                         sample ? "" : sample.error().message(), NowNs());
    state_->StoreSample(d.index, sample ? std::optional(std::move(*sample)) : std::nullopt);
  }
  changed |= state_->health().Tick(NowNs());
  if (changed) OnHealthChanged();
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
  return CollectMetrics(src);
}

Status Daemon::Inject(const std::string& gpu, const std::string& event, uint64_t code) {
  if (injector_ == nullptr) return Status::FailedPrecondition("fault injection is off");
  const device::DeviceInfo* target = state_->FindByUuid(gpu);
  if (target == nullptr && !gpu.empty() &&
      gpu.find_first_not_of("0123456789") == std::string::npos && gpu.size() < 4) {
    size_t index = std::stoul(gpu);
    if (index < state_->devices().size()) target = &state_->devices()[index];
  }
  if (target == nullptr) {
    return Status::InvalidArgument("gpu: \"" + gpu + "\" is neither a UUID nor an index here");
  }
  device::HealthEvent e;
  e.uuid = target->uuid;
  e.code = code;
  if (event == "xid") {
    e.kind = device::HealthEvent::Kind::kXid;
    e.description = "injected XID " + std::to_string(code);
  } else if (event == "ecc-dbe") {
    e.kind = device::HealthEvent::Kind::kDoubleBitEcc;
    e.description = "injected double-bit ECC error";
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
  } else {
    return Status::InvalidArgument("event: \"" + event +
                                   "\" is not one of xid, ecc-dbe, recovered, lost, found");
  }
  injector_->InjectEvent(std::move(e));
  return Status::Ok();
}

}  // namespace vgpu::node
