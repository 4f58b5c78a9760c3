// AdmissionWebhook: the mutating admission webhook that lets pods written for HAMi run on vgpu
// unchanged. The API server sends it an AdmissionReview (admission.k8s.io/v1) for every pod
// created in the namespaces the MutatingWebhookConfiguration selects; it answers with a JSON
// patch (RFC 6902, base64 in response.patch, patchType JSONPatch) or with no patch.
//
// Which pods it changes: a pod with a container (app or init) that names a managed resource
// (<prefix>/gpu, gpumem, gpumem-percentage, gpucores or priority, in limits or requests) and
// whose spec.schedulerName is empty or listed in options.replace_schedulers (default
// "default-scheduler", the name the API server fills in, and "hami-scheduler", the name HAMi's
// webhook writes, so that manifests written for HAMi need no edit). A pod that names any other
// scheduler explicitly is left alone, with a warning: its owner chose that scheduler. A pod that
// already names options.scheduler_name gets no schedulerName change. A GPU pod that names a node
// (spec.nodeName) bypasses every scheduler: it is left alone, with a warning.
//
// What it changes in such a pod:
// - spec.schedulerName := options.scheduler_name.
// - A container that gets a GPU from gpumem (> 0), gpumem-percentage or gpucores alone (no
//   <prefix>/gpu) gets <prefix>/gpu: "1" in its limits (and requests, when it has them). The
//   scheduler already reads it as one GPU, but kubelet calls the device plugin only for the
//   resource it advertises (<prefix>/gpu), so without it the container would get no slice.
// - With options.cpu_pods, a pod that asks for no GPU gets spec.schedulerName :=
//   options.scheduler_name too (same rules: a replaceable or empty scheduler name, no
//   spec.nodeName), so that the extender also places pods without GPUs: their CPU and memory
//   decide which GPUs of a node can still be fed.
// - With options.hide_gpus, every container that gets no GPU has NVIDIA_VISIBLE_DEVICES=none in
//   its environment, so that images which set it to "all" do not reach the node's GPUs outside
//   any slice (in every pod the webhook does not leave alone, GPU pod or not).
// Nothing else is injected: the node daemon gives each container its limits, priority and
// visible devices. A privileged container in a GPU pod is admitted with a warning.
//
// What it refuses (allowed: false, status 422 "Invalid", the message names the container, the
// resource and the value): a pod it would send to vgpu whose requests can never be placed, as
// the scheduler extender reads them (ParsePodGpuRequest, the same parser): negative values,
// gpucores or gpumem-percentage outside 1..100, priority outside 0..1, fractions, <prefix>/gpu=0
// with memory or cores, more GPUs than a node holds, an unknown <prefix>/ resource.
//
// Review(): HTTP 400 with a JSON body whose response.status.message says what is wrong (and
// response.uid, when the body holds one) for a body that is not an admission.k8s.io/v1 (or
// v1beta1, same shape) AdmissionReview with a request object and a request.uid, a pod CREATE
// whose request.object is not a Pod, or a body nested deeper than 256 levels. Otherwise HTTP 200
// with an AdmissionReview of the request's apiVersion whose response echoes request.uid. A review
// of another resource is allowed with a warning; operations other than CREATE and subresources are
// allowed unchanged (the scheduler name is fixed at creation). Patches are RFC 6902 (patchType
// JSONPatch, base64 in response.patch).
//
// vgpu.io/estimate (webhook_estimate.h): a pod with that annotation and no gpumem gets its
// memory request from the estimate first, recorded in vgpu.io/estimate-result; an unreadable
// annotation or an estimate above any GPU refuses the pod.
//
// Thread-safe: Review() may run concurrently; counters are atomic.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/api/kube_client.h"
#include "k8s/wire/pod_request.h"

namespace vgpu::k8s {

struct WebhookOptions {
  ResourceNames names;
  std::string scheduler_name = "vgpu-scheduler";
  std::vector<std::string> replace_schedulers = {"default-scheduler", "hami-scheduler"};
  bool hide_gpus = false;
  bool cpu_pods = false;
};

class AdmissionWebhook {
 public:
  explicit AdmissionWebhook(WebhookOptions options);

  // The changes for one pod object.
  struct Mutation {
    enum class Outcome { kPatched, kUnchanged, kSkipped, kDenied };
    Outcome outcome = Outcome::kUnchanged;
    Json patch = Json::array();  // RFC 6902 operations
    std::vector<std::string> warnings;
    std::vector<std::string> changes;  // human-readable, for the log
    std::string denial;                // kDenied: why
  };
  Mutation MutatePod(const Json& pod) const;

  struct Reply {
    int http_status = 200;
    std::string body;  // JSON
  };
  // One AdmissionReview request body to the HTTP answer.
  Reply Review(std::string_view body);

  // vgpu_scheduler_webhook_requests_total{result="patched|unchanged|skipped|denied|error"}.
  void RenderMetrics(std::string* out) const;
  uint64_t count(Mutation::Outcome outcome) const;
  uint64_t errors() const { return errors_.load(); }

 private:
  bool MayReplace(const std::string& scheduler) const;
  // MutatePod without the vgpu.io/estimate annotation's fill.
  Mutation MutateRequests(const Json& pod) const;

  WebhookOptions options_;
  std::atomic<uint64_t> patched_{0}, unchanged_{0}, skipped_{0}, denied_{0}, errors_{0};
};

}  // namespace vgpu::k8s
