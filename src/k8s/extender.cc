#include "k8s/extender.h"

#include <chrono>

#include "common/log.h"

namespace vgpu::k8s {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kNotReady =
    "vgpu scheduler is starting: the cluster's GPUs and pods are not loaded yet";

Extender::Reply BadRequest(const Status& s) { return {400, Json{{"Error", s.message()}}.dump()}; }

}  // namespace

Extender::Extender(PlacementState* state, KubeClient* client, ExtenderMetrics* metrics,
                   ExtenderOptions options)
    : state_(state), client_(client), metrics_(metrics), options_(std::move(options)) {}

Result<PodGpuRequest> Extender::RequestOf(const Json& pod) {
  auto r = ParsePodGpuRequest(pod, options_.request);
  if (!r) return r.error();
  const std::string uid = MetaString(pod, "uid");
  if (!uid.empty()) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= options_.request_cache_entries) cache_.clear();
    cache_.insert_or_assign(uid, *r);
  }
  return r;
}

Extender::Reply Extender::Filter(std::string_view body) {
  const auto t0 = Clock::now();
  Reply reply;
  auto args = ParseExtenderArgs(body);
  if (!args) {
    reply = BadRequest(args.error());
  } else {
    FilterAnswer answer;
    if (!ready()) {
      answer.error = kNotReady;
    } else if (auto req = RequestOf(args->pod); !req) {
      for (const std::string& n : args->node_names) {
        answer.unresolvable[n] = "vgpu: invalid GPU request: " + req.error().message();
      }
    } else {
      FilterResult f = state_->Filter(*req, args->node_names);
      answer.feasible = std::move(f.feasible);
      answer.failed = std::move(f.failed);
      answer.unresolvable = std::move(f.unresolvable);
    }
    if (metrics_ != nullptr) {
      metrics_->nodes_feasible += answer.feasible.size();
      metrics_->nodes_failed += answer.failed.size();
      metrics_->nodes_unresolvable += answer.unresolvable.size();
    }
    reply.body = FilterResultJson(answer, *args);
    if (!answer.error.empty()) reply.status = 299;  // marks the error for the metric below
  }
  if (metrics_ != nullptr) {
    metrics_->Record(Verb::kFilter, reply.status == 200, Clock::now() - t0);
  }
  if (reply.status == 299) reply.status = 200;  // kube-scheduler reads Error from a 200
  return reply;
}

Extender::Reply Extender::Prioritize(std::string_view body) {
  const auto t0 = Clock::now();
  Reply reply;
  auto args = ParseExtenderArgs(body);
  if (!args) {
    reply = BadRequest(args.error());
  } else if (!ready()) {
    reply = {503, Json{{"Error", kNotReady}}.dump()};
  } else {
    std::vector<int64_t> scores(args->node_names.size(), 0);
    if (auto req = RequestOf(args->pod); req) scores = state_->Score(*req, args->node_names);
    reply.body = HostPriorityListJson(args->node_names, scores);
  }
  if (metrics_ != nullptr) {
    metrics_->Record(Verb::kPrioritize, reply.status == 200, Clock::now() - t0);
  }
  return reply;
}

Result<PodGpuRequest> Extender::RequestForBind(const BindingArgs& args, std::string* uid) {
  *uid = args.pod_uid;
  if (!uid->empty()) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(*uid);
    if (it != cache_.end()) return it->second;
  }
  if (client_ == nullptr) {
    return Status::NotFound("pod " + args.pod_namespace + "/" + args.pod_name +
                            " was not filtered by this scheduler");
  }
  auto pod = client_->Get(ResourceKind::kPod, args.pod_namespace, args.pod_name);
  if (!pod) return pod.error();
  const std::string actual = MetaString(*pod, "uid");
  if (!uid->empty() && actual != *uid) {
    return Status::NotFound("pod " + args.pod_namespace + "/" + args.pod_name +
                            " was replaced (UID " + actual + ", not " + *uid + ")");
  }
  *uid = actual;
  return RequestOf(*pod);
}

std::string Extender::DoBind(const BindingArgs& args, BindOutcome* outcome) {
  const std::string who = args.pod_namespace + "/" + args.pod_name;
  std::string uid;
  auto req = RequestForBind(args, &uid);
  if (!req) {
    *outcome = BindOutcome::kApiError;
    return "vgpu: cannot read pod " + who + ": " + req.error().message();
  }
  if (!req->HasGpus()) {
    if (client_ != nullptr) {
      Status s = client_->CreateBinding(args.pod_namespace, args.pod_name, uid, args.node);
      if (!s.ok()) {
        *outcome = BindOutcome::kApiError;
        return "vgpu: binding " + who + ": " + s.message();
      }
    }
    *outcome = BindOutcome::kBound;
    return "";
  }
  if (auto old = state_->UnsettledElsewhere(uid, args.node); old && client_ != nullptr) {
    // An earlier decision for this pod names another node. Ask where the pod is before moving
    // it, so a pod that did get bound there is never left uncounted.
    auto pod = client_->Get(ResourceKind::kPod, args.pod_namespace, args.pod_name);
    if (!pod) {
      *outcome = BindOutcome::kApiError;
      return "vgpu: reading pod " + who + ": " + pod.error().message();
    }
    auto info = PodInfoOf(*pod);
    if (info && info->uid == uid && !info->node_name.empty()) {
      state_->ConfirmBound(uid, old->generation);
      *outcome = info->node_name == args.node ? BindOutcome::kBound : BindOutcome::kApiError;
      return info->node_name == args.node
                 ? ""
                 : "vgpu: pod " + who + " is already bound to " + info->node_name;
    }
    state_->ExpireIfUnbound(uid, old->generation);
  }
  auto ticket = state_->Assume(uid, args.pod_namespace, args.pod_name, *req, args.node);
  if (!ticket) {
    *outcome = BindOutcome::kNoRoom;
    return "vgpu: " + ticket.error().message();
  }
  if (client_ == nullptr) {
    state_->BindSucceeded(uid, ticket->generation);
    *outcome = BindOutcome::kBound;
    return "";
  }
  const AnnotationChanges changes = {
      {kAssignedNodeAnnotation, args.node},
      {kAssignedGpusAnnotation, FormatAssignment(ticket->assignment)},
      {kAssignedAtAnnotation, FormatTimestamp(state_->options().clock())}};
  auto patched = PatchAnnotations(*client_, ResourceKind::kPod, args.pod_namespace, args.pod_name,
                                  changes, uid);
  if (!patched) {
    state_->BindFailed(uid, ticket->generation);
    *outcome = BindOutcome::kApiError;
    return "vgpu: recording the decision on " + who + ": " + patched.error().message();
  }
  Status s = client_->CreateBinding(args.pod_namespace, args.pod_name, uid, args.node);
  if (s.ok()) {
    state_->BindSucceeded(uid, ticket->generation);
    *outcome = BindOutcome::kBound;
    return "";
  }
  if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kInvalidArgument ||
      s.code() == StatusCode::kPermissionDenied) {
    state_->BindFailed(uid, ticket->generation);
    *outcome = BindOutcome::kApiError;
    return "vgpu: binding " + who + ": " + s.message();
  }
  // Conflict (already bound?) or no answer: ask where the pod is.
  auto pod = client_->Get(ResourceKind::kPod, args.pod_namespace, args.pod_name);
  if (pod && MetaString(*pod, "uid") == uid) {
    const Json& spec = (*pod)["spec"];
    const std::string node =
        spec.is_object() && spec.contains("nodeName") && spec["nodeName"].is_string()
            ? spec["nodeName"].get<std::string>()
            : "";
    if (node == args.node) {
      state_->BindSucceeded(uid, ticket->generation);
      *outcome = BindOutcome::kBound;
      return "";
    }
    state_->BindFailed(uid, ticket->generation);
    *outcome = BindOutcome::kApiError;
    return "vgpu: binding " + who + ": " + s.message();
  }
  if (!pod && pod.error().code() == StatusCode::kNotFound) {
    state_->BindFailed(uid, ticket->generation);
    *outcome = BindOutcome::kApiError;
    return "vgpu: pod " + who + " is gone";
  }
  state_->BindUnknown(uid, ticket->generation);
  *outcome = BindOutcome::kUnknown;
  VGPU_LOG_WARN("binding %s to %s: outcome unknown (%s); its GPUs stay reserved until checked",
                who.c_str(), args.node.c_str(), s.message().c_str());
  return "vgpu: binding " + who + ": " + s.message();
}

Extender::Reply Extender::Bind(std::string_view body) {
  const auto t0 = Clock::now();
  Reply reply;
  BindOutcome outcome = BindOutcome::kBadRequest;
  auto args = ParseBindingArgs(body);
  if (!args) {
    reply = BadRequest(args.error());
  } else if (!ready()) {
    reply.body = BindingResultJson(kNotReady);
    outcome = BindOutcome::kApiError;
  } else {
    reply.body = BindingResultJson(DoBind(*args, &outcome));
  }
  if (metrics_ != nullptr) {
    metrics_->binds[static_cast<size_t>(outcome)]++;
    metrics_->Record(Verb::kBind, outcome == BindOutcome::kBound, Clock::now() - t0);
  }
  return reply;
}

}  // namespace vgpu::k8s
