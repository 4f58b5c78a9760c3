#include "k8s/extender/scheduler_service.h"

#include "common/log.h"
#include "k8s/extender/metrics.h"

namespace vgpu::k8s {
namespace {

constexpr const char* kUnfinishedPods = "status.phase!=Succeeded,status.phase!=Failed";

}  // namespace

SchedulerService::SchedulerService(KubeClient* client, PlacementState* state,
                                   ServiceOptions options)
    : client_(client), state_(state), options_(std::move(options)) {
  Informer::Options no;
  no.label_selector = options_.node_label_selector;
  no.initial_backoff = options_.informer_backoff;
  no.watch_timeout_seconds = options_.watch_timeout_seconds;
  nodes_ = std::make_unique<Informer>(
      client_, ResourceKind::kNode, no,
      Informer::Handler{[this](const std::vector<Json>& items) { OnNodes(items); },
                        [this](const std::string& t, const Json& o) { OnNodeEvent(t, o); }});
  Informer::Options po;
  po.field_selector = kUnfinishedPods;
  po.initial_backoff = options_.informer_backoff;
  po.watch_timeout_seconds = options_.watch_timeout_seconds;
  pods_ = std::make_unique<Informer>(
      client_, ResourceKind::kPod, po,
      Informer::Handler{[this](const std::vector<Json>& items) { OnPods(items); },
                        [this](const std::string& t, const Json& o) { OnPodEvent(t, o); }});
}

SchedulerService::~SchedulerService() { Stop(); }

void SchedulerService::OnNodes(const std::vector<Json>& items) {
  std::map<std::string, NodeEntry> nodes;
  size_t no_allocatable = 0;
  for (const Json& n : items) {
    auto inv = InventoryOfNode(n);
    if (!inv) {
      ++bad_objects_;
      VGPU_LOG_WARN("%s", inv.error().message().c_str());
      continue;
    }
    if (inv->has_value()) {
      NodeEntry entry{std::move(**inv), NodeAllocatableOf(n)};
      if (entry.allocatable.cpu_milli == 0 || entry.allocatable.memory_mib == 0) ++no_allocatable;
      nodes[MetaString(n, "name")] = std::move(entry);
    }
  }
  VGPU_LOG_INFO("loaded %zu GPU nodes of %zu listed", nodes.size(), items.size());
  if (no_allocatable > 0) {
    VGPU_LOG_WARN(
        "%zu GPU nodes report no allocatable CPU or memory (status.allocatable): pods that request "
        "CPU or memory do not fit there, as kube-scheduler sees it",
        no_allocatable);
  }
  state_->ReplaceNodes(std::move(nodes));
}

void SchedulerService::OnNodeEvent(const std::string& type, const Json& node) {
  const std::string name = MetaString(node, "name");
  if (type == "DELETED") {
    state_->RemoveNode(name);
    return;
  }
  auto inv = InventoryOfNode(node);
  if (!inv) {
    ++bad_objects_;
    VGPU_LOG_WARN("%s; keeping the last good inventory", inv.error().message().c_str());
    return;
  }
  if (inv->has_value()) {
    state_->UpsertNode(name, **inv, NodeAllocatableOf(node));
  } else {
    state_->RemoveNode(name);
  }
}

void SchedulerService::OnPods(const std::vector<Json>& items) {
  std::vector<PodInfo> pods;
  pods.reserve(items.size());
  for (const Json& p : items) {
    auto info = PodInfoOf(p, state_->options().request);
    if (!info) {
      ++bad_objects_;
      VGPU_LOG_WARN("%s", info.error().message().c_str());
      continue;
    }
    pods.push_back(std::move(*info));
  }
  state_->ReplacePods(pods);
}

void SchedulerService::OnPodEvent(const std::string& type, const Json& pod) {
  if (type == "DELETED") {
    state_->RemovePod(MetaString(pod, "uid"));
    return;
  }
  auto info = PodInfoOf(pod, state_->options().request);
  if (!info) {
    ++bad_objects_;
    VGPU_LOG_WARN("%s", info.error().message().c_str());
    return;
  }
  state_->UpsertPod(*info);
}

Status SchedulerService::Sync() {
  VGPU_RETURN_IF_ERROR(nodes_->ListNow().WithContext("listing nodes"));
  VGPU_RETURN_IF_ERROR(pods_->ListNow().WithContext("listing pods"));
  const PlacementState::Counts c = state_->counts();
  VGPU_LOG_INFO("state loaded: %zu nodes, %zu GPUs, %zu pods bound, %zu assumed, %zu not placed",
                c.nodes, c.gpus, c.pods_bound, c.pods_assumed, c.pods_unplaced);
  return Status::Ok();
}

void SchedulerService::Start() {
  nodes_->Start();
  pods_->Start();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }
  checker_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, options_.check_interval, [&] { return stop_; })) {
      lock.unlock();
      CheckExpired();
      lock.lock();
    }
  });
}

void SchedulerService::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (checker_.joinable()) checker_.join();
  nodes_->Stop();
  pods_->Stop();
}

size_t SchedulerService::CheckExpired() {
  size_t settled = 0;
  for (const PlacementState::Expired& e : state_->ExpiredAssumptions()) {
    auto pod = client_->Get(ResourceKind::kPod, e.ns, e.name);
    if (!pod) {
      if (pod.error().code() == StatusCode::kNotFound) {
        state_->RemovePod(e.uid);
        ++settled;
      }
      continue;  // the API server is unreachable: ask again next round
    }
    auto info = PodInfoOf(*pod);
    if (!info || info->uid != e.uid || info->terminal) {
      state_->RemovePod(e.uid);
    } else if (!info->node_name.empty()) {
      state_->ConfirmBound(e.uid, e.generation);
    } else {
      VGPU_LOG_INFO("pod %s/%s was not bound within the assume TTL; releasing its GPUs",
                    e.ns.c_str(), e.name.c_str());
      if (auto released = state_->ExpireIfUnbound(e.uid, e.generation)) ClearDecision(e, *released);
    }
    ++settled;
  }
  return settled;
}

void SchedulerService::ClearDecision(const PlacementState::Expired& e,
                                     const PodAssignment& released) {
  // Remove the stale decision from the pod, unless a newer one replaced it meanwhile (the
  // resourceVersion precondition makes the check and the removal one step).
  auto r = UpdateAnnotations(*client_, ResourceKind::kPod, e.ns, e.name,
                             [&](const Json& pod) -> Result<AnnotationChanges> {
                               if (MetaString(pod, "uid") != e.uid) return AnnotationChanges{};
                               auto current = AssignmentOfPod(pod);
                               if (!current || !current->has_value() || !(**current == released)) {
                                 return AnnotationChanges{};
                               }
                               return AnnotationChanges{{kAssignedNodeAnnotation, std::nullopt},
                                                        {kAssignedGpusAnnotation, std::nullopt},
                                                        {kAssignedAtAnnotation, std::nullopt}};
                             });
  if (!r) {
    VGPU_LOG_WARN("clearing the expired decision of %s/%s: %s", e.ns.c_str(), e.name.c_str(),
                  r.error().message().c_str());
  }
}

void SchedulerService::RenderMetrics(std::string* out) {
  const PlacementState::Counts c = state_->counts();
  RenderHeader(out, "vgpu_scheduler_nodes", "gauge", "GPU nodes known to the scheduler.");
  RenderSample(out, "vgpu_scheduler_nodes", "", static_cast<double>(c.nodes));
  RenderHeader(out, "vgpu_scheduler_gpus", "gauge", "GPUs known to the scheduler.");
  RenderSample(out, "vgpu_scheduler_gpus", "", static_cast<double>(c.gpus));
  RenderHeader(out, "vgpu_scheduler_pods", "gauge",
               "GPU pods tracked: bound, assumed (decided, binding not yet seen), unplaced "
               "(their node or GPU is unknown, or they conflict).");
  RenderSample(out, "vgpu_scheduler_pods", "state=\"bound\"", static_cast<double>(c.pods_bound));
  RenderSample(out, "vgpu_scheduler_pods", "state=\"assumed\"",
               static_cast<double>(c.pods_assumed));
  RenderSample(out, "vgpu_scheduler_pods", "state=\"unplaced\"",
               static_cast<double>(c.pods_unplaced));
  RenderHeader(out, "vgpu_scheduler_filter_holds", "gauge",
               "Pods the narrow filter mode holds on the one node it answered, until their bind.");
  RenderSample(out, "vgpu_scheduler_filter_holds", "", static_cast<double>(c.pods_held));
  RenderHeader(out, "vgpu_scheduler_engine_rebuilds_total", "counter",
               "Rebuilds of the placement engine after node inventory changes.");
  RenderSample(out, "vgpu_scheduler_engine_rebuilds_total", "", static_cast<double>(c.rebuilds));
  RenderHeader(out, "vgpu_scheduler_placement_conflicts_total", "counter",
               "Pod assignments that could not be counted (GPU missing or over-committed).");
  RenderSample(out, "vgpu_scheduler_placement_conflicts_total", "",
               static_cast<double>(c.conflicts));
  RenderHeader(out, "vgpu_scheduler_assumptions_expired_total", "counter",
               "Decisions released because the pod was not bound within the assume TTL.");
  RenderSample(out, "vgpu_scheduler_assumptions_expired_total", "", static_cast<double>(c.expired));
  RenderHeader(out, "vgpu_scheduler_invalid_objects_total", "counter",
               "Nodes or pods whose vgpu annotations could not be read.");
  RenderSample(out, "vgpu_scheduler_invalid_objects_total", "",
               static_cast<double>(bad_objects_.load()));
  const std::pair<const char*, Informer*> informers[] = {{"nodes", nodes_.get()},
                                                         {"pods", pods_.get()}};
  RenderHeader(out, "vgpu_scheduler_watch_resumes_total", "counter",
               "Watches resumed from the last resource version (server timeout or dropped).");
  for (const auto& [name, inf] : informers) {
    RenderSample(out, "vgpu_scheduler_watch_resumes_total",
                 std::string("resource=\"") + name + "\"",
                 static_cast<double>(inf->stats().resumed));
  }
  RenderHeader(out, "vgpu_scheduler_relists_total", "counter",
               "Lists forced by 410 Gone (resource version too old).");
  for (const auto& [name, inf] : informers) {
    RenderSample(out, "vgpu_scheduler_relists_total", std::string("resource=\"") + name + "\"",
                 static_cast<double>(inf->stats().relists));
  }
  RenderHeader(out, "vgpu_scheduler_watch_errors_total", "counter",
               "Failed lists and watches (each retried with backoff).");
  for (const auto& [name, inf] : informers) {
    RenderSample(out, "vgpu_scheduler_watch_errors_total", std::string("resource=\"") + name + "\"",
                 static_cast<double>(inf->stats().errors));
  }
  if (!options_.per_gpu_metrics) return;
  const std::vector<PlacementState::GpuUsage> usage = state_->Usage();
  const auto labels = [](const PlacementState::GpuUsage& u) {
    return "node=\"" + EscapeLabel(u.node) + "\",uuid=\"" + EscapeLabel(u.uuid) + "\",index=\"" +
           std::to_string(u.index) + "\",model=\"" + EscapeLabel(u.model) + "\"";
  };
  RenderHeader(out, "vgpu_gpu_memory_bytes", "gauge", "GPU memory the scheduler hands out.");
  for (const auto& u : usage) {
    RenderSample(out, "vgpu_gpu_memory_bytes", labels(u),
                 static_cast<double>(u.memory_mib) * 1048576.0);
  }
  RenderHeader(out, "vgpu_gpu_memory_allocated_bytes", "gauge",
               "GPU memory reserved by placed pods.");
  for (const auto& u : usage) {
    RenderSample(out, "vgpu_gpu_memory_allocated_bytes", labels(u),
                 static_cast<double>(u.memory_used_mib) * 1048576.0);
  }
  RenderHeader(out, "vgpu_gpu_compute_allocated_ratio", "gauge",
               "Share of the GPU's compute reserved by placed pods (0..1).");
  for (const auto& u : usage) {
    RenderSample(out, "vgpu_gpu_compute_allocated_ratio", labels(u), u.milli_used / 1000.0);
  }
  RenderHeader(out, "vgpu_gpu_pods", "gauge", "Pods placed on the GPU.");
  for (const auto& u : usage) RenderSample(out, "vgpu_gpu_pods", labels(u), u.pods);
  RenderHeader(out, "vgpu_gpu_healthy", "gauge", "1 when the node daemon reports the GPU healthy.");
  for (const auto& u : usage) RenderSample(out, "vgpu_gpu_healthy", labels(u), u.healthy ? 1 : 0);
}

}  // namespace vgpu::k8s
