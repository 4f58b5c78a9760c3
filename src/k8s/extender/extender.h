// Extender: the kube-scheduler extender verbs over PlacementState, independent of HTTP.
//
// Contract:
// - Filter answers ExtenderArgs with every feasible node and a reason for each other node. A pod
//   whose GPU request is invalid (e.g. gpucores=101) gets every node as unresolvable with the
//   reason, so `kubectl describe pod` shows it; a malformed body is HTTP 400 with the reason.
// - Prioritize answers a HostPriorityList with scores 0..10.
// - Bind reserves GPUs on the chosen node (PlacementState::Assume), records the decision on the
//   pod (vgpu.io/assigned-node, -gpus, -at; merge patch with the pod's UID as precondition), then
//   creates the Binding. Any failure releases the GPUs, except when the API server leaves the
//   outcome unknown: then the GPUs stay assumed until the expiry check asks the API server, and
//   a retry on another node first reads the pod (a pod bound meanwhile is not moved). There is
//   no node-wide lock: binds for one node run concurrently and each holds the engine's mutex
//   for microseconds. Pods without GPU requests are bound directly.
// - Before set_ready(true) every verb answers with an error saying the state is loading.
// - `client` may be null (no API server): Bind then only reserves (benchmarks, dry runs).
// - kube-scheduler's nodeCacheCapable form (Pod + NodeNames) takes a fast path: the body is
//   split without a DOM, the Pod's request comes from a cache keyed by the Pod's exact text (so
//   prioritize reuses filter's parse), node names stay views into the body, and the answer is
//   written directly. Other forms, and anything the fast path does not recognize, go through
//   the full parser; both give the same answers.
// - Thread-safe.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "k8s/api/kube_client.h"
#include "k8s/extender/extender_protocol.h"
#include "k8s/extender/metrics.h"
#include "k8s/extender/placement_state.h"
#include "k8s/extender/pod_request_cache.h"

namespace vgpu::k8s {

struct ExtenderOptions {
  RequestOptions request;
  size_t request_cache_entries = 20000;
};

class Extender {
 public:
  struct Reply {
    int status = 200;
    std::string body;
  };

  Extender(PlacementState* state, KubeClient* client, ExtenderMetrics* metrics,
           ExtenderOptions options);

  Reply Filter(std::string_view body);
  Reply Prioritize(std::string_view body);
  Reply Bind(std::string_view body);

  void set_ready(bool ready) { ready_.store(ready); }
  bool ready() const { return ready_.load(); }

 private:
  Result<PodGpuRequest> RequestOf(const Json& pod);
  // The fast path's parse of a Pod's text (cached); null when the text is not a JSON object.
  std::shared_ptr<const ParsedPod> ParsedPodOf(std::string_view pod_text);
  void RememberForBind(const std::string& uid, const PodGpuRequest& r);
  std::string FastFilter(const ExtenderArgsView& view, const ParsedPod& pod, bool* ok);
  Result<PodGpuRequest> RequestForBind(const BindingArgs& args, std::string* uid);
  std::string DoBind(const BindingArgs& args, BindOutcome* outcome);

  PlacementState* state_;
  KubeClient* client_;
  ExtenderMetrics* metrics_;
  ExtenderOptions options_;
  std::atomic<bool> ready_{false};
  std::mutex cache_mu_;
  std::unordered_map<std::string, PodGpuRequest> cache_;  // by pod UID
  PodRequestCache pods_;                                  // by the Pod's JSON text
  PodRequestCache shapes_;                                // by PodRequestKeyOf's text
};

}  // namespace vgpu::k8s
