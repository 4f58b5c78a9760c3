// SchedulerService: keeps PlacementState in step with the API server and settles expired
// assumptions.
//
// Contract:
// - Sync() lists nodes (with the label selector: their GPU inventories and allocatable CPU and
//   memory), then pods of all namespaces that are not finished (their decisions, CPU and memory
//   requests, and the requests of pending ones), and loads them into the state: the rebuild after
//   a restart. The extender must not serve before it succeeds.
// - Start() runs a node informer and a pod informer (watches resumed, 410 relisted, see
//   informer.h) and a checker that, every `check_interval`, asks the API server about assumed
//   pods past their deadline: bound ones are confirmed, deleted ones forgotten, unbound ones
//   released and their decision annotations removed (unless a newer decision replaced them).
// - RenderMetrics() appends gauges: nodes, GPUs, pods by state, filter holds, per-GPU allocation,
//   engine rebuilds, placement conflicts, expired assumptions, informer counters.
// - Stop() ends the threads. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "k8s/api/informer.h"
#include "k8s/api/kube_client.h"
#include "k8s/extender/placement_state.h"

namespace vgpu::k8s {

struct ServiceOptions {
  std::string node_label_selector;
  std::chrono::milliseconds check_interval{10000};
  std::chrono::milliseconds informer_backoff{200};
  int watch_timeout_seconds = 300;
  bool per_gpu_metrics = true;
};

class SchedulerService {
 public:
  SchedulerService(KubeClient* client, PlacementState* state, ServiceOptions options);
  ~SchedulerService();

  Status Sync();
  void Start();
  void Stop();
  // One round of the expiry check (Start() runs it periodically); returns how many were settled.
  size_t CheckExpired();
  void RenderMetrics(std::string* out);

 private:
  void OnNodes(const std::vector<Json>& items);
  void OnNodeEvent(const std::string& type, const Json& node);
  void OnPods(const std::vector<Json>& items);
  void OnPodEvent(const std::string& type, const Json& pod);
  void ClearDecision(const PlacementState::Expired& e, const PodAssignment& released);

  KubeClient* client_;
  PlacementState* state_;
  ServiceOptions options_;
  std::unique_ptr<Informer> nodes_, pods_;
  std::thread checker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<uint64_t> bad_objects_{0};
};

}  // namespace vgpu::k8s
