#include "k8s/extender/extender.h"

#include <chrono>

#include "common/json_string.h"
#include "common/log.h"
#include "k8s/api/json_scan.h"

namespace vgpu::k8s {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kNotReady =
    "vgpu scheduler is starting: the cluster's GPUs and pods are not loaded yet";

Extender::Reply BadRequest(const Status& s) { return {400, Json{{"Error", s.message()}}.dump()}; }

// ExtenderFilterResult in the NodeNames form from per-node verdicts (request order).
std::string FilterVerdictsJson(std::span<const std::string_view> names, const NodeVerdicts& v) {
  std::vector<std::string> reasons(v.reasons.size());
  size_t longest = 0;
  for (size_t r = 0; r < v.reasons.size(); ++r) {
    AppendJsonString(&reasons[r], v.reasons[r]);
    longest = std::max(longest, reasons[r].size());
  }
  std::string text;
  text.reserve(96 + names.size() * 24 +
               (v.counts[NodeVerdicts::kFailed] + v.counts[NodeVerdicts::kUnresolvable] +
                v.counts[NodeVerdicts::kNarrowed]) *
                   (longest + 24));
  text += "{\"Nodes\":null,\"NodeNames\":[";
  bool first = true;
  for (size_t i = 0; i < names.size(); ++i) {
    if (v.kind[i] != NodeVerdicts::kFeasible) continue;
    if (!first) text += ',';
    first = false;
    AppendJsonString(&text, names[i]);
  }
  text += ']';
  // Narrowed nodes are feasible but left out: unresolvable, so that preemption does not pick
  // them either.
  const auto in_field = [&](size_t i, bool unresolvable) {
    return unresolvable
               ? v.kind[i] == NodeVerdicts::kUnresolvable || v.kind[i] == NodeVerdicts::kNarrowed
               : v.kind[i] == NodeVerdicts::kFailed;
  };
  for (const auto& [field, unresolvable] :
       {std::pair{"FailedNodes", false}, std::pair{"FailedAndUnresolvableNodes", true}}) {
    text += ",\"";
    text += field;
    text += "\":{";
    first = true;
    const size_t count =
        unresolvable ? v.counts[NodeVerdicts::kUnresolvable] + v.counts[NodeVerdicts::kNarrowed]
                     : v.counts[NodeVerdicts::kFailed];
    for (size_t i = 0; i < names.size() && count > 0; ++i) {
      if (!in_field(i, unresolvable)) continue;
      if (!first) text += ',';
      first = false;
      AppendJsonString(&text, names[i]);
      text += ':';
      text += reasons[v.reason[i]];
    }
    text += '}';
  }
  text += ",\"Error\":\"\"}";
  return text;
}

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

std::shared_ptr<const ParsedPod> Extender::ParsedPodOf(std::string_view pod_text) {
  if (auto hit = pods_.Find(pod_text)) {
    if (hit->request) RememberForBind(hit->uid, *hit->request);
    return hit;
  }
  if (JsonNestsDeeperThan(pod_text)) return nullptr;  // the full parser explains why
  // Another pod with the same spec and annotations (a replica): its request, this pod's identity.
  const std::optional<PodRequestKey> key = PodRequestKeyOf(pod_text);
  if (key) {
    if (auto same = shapes_.Find(key->text)) {
      auto parsed = std::make_shared<ParsedPod>();
      parsed->uid = key->uid;
      parsed->ns = key->ns;
      parsed->name = key->name;
      parsed->request = same->request;
      if (parsed->request) RememberForBind(parsed->uid, *parsed->request);
      pods_.Insert(pod_text, parsed);
      return parsed;
    }
  }
  const Json pod = Json::parse(pod_text, nullptr, false);
  if (!pod.is_object()) return nullptr;
  auto parsed = std::make_shared<ParsedPod>();
  parsed->uid = MetaString(pod, "uid");
  parsed->ns = MetaString(pod, "namespace");
  parsed->name = MetaString(pod, "name");
  parsed->request = RequestOf(pod);
  pods_.Insert(pod_text, parsed);
  // Kept by shape only when the scanner read the same identity the parser did.
  if (key && key->uid == parsed->uid && key->ns == parsed->ns && key->name == parsed->name) {
    shapes_.Insert(key->text, parsed);
  }
  return parsed;
}

void Extender::RememberForBind(const std::string& uid, const PodGpuRequest& r) {
  if (uid.empty()) return;
  std::lock_guard<std::mutex> lock(cache_mu_);
  if (cache_.count(uid) != 0) return;
  if (cache_.size() >= options_.request_cache_entries) cache_.clear();
  cache_.emplace(uid, r);
}

std::string Extender::FastFilter(const ExtenderArgsView& view, const ParsedPod& pod, bool* ok) {
  NodeVerdicts v;
  if (!pod.request) {
    v.kind.assign(view.node_names.size(), NodeVerdicts::kUnresolvable);
    v.reason.assign(view.node_names.size(), 0);
    v.reasons = {"vgpu: invalid GPU request: " + pod.request.error().message()};
    v.counts[NodeVerdicts::kUnresolvable] = view.node_names.size();
  } else {
    state_->FilterVerdicts(PodRef{pod.uid, pod.ns, pod.name}, *pod.request, view.node_names, &v);
  }
  if (metrics_ != nullptr) {
    metrics_->nodes_feasible += v.counts[NodeVerdicts::kFeasible];
    metrics_->nodes_failed += v.counts[NodeVerdicts::kFailed];
    metrics_->nodes_unresolvable += v.counts[NodeVerdicts::kUnresolvable];
    metrics_->nodes_narrowed += v.counts[NodeVerdicts::kNarrowed];
  }
  *ok = true;
  return FilterVerdictsJson(view.node_names, v);
}

Extender::Reply Extender::Filter(std::string_view body) {
  const auto t0 = Clock::now();
  Reply reply;
  if (ready()) {
    if (auto view = ScanExtenderArgsView(body)) {
      if (auto pod = ParsedPodOf(view->pod)) {
        bool ok = false;
        reply.body = FastFilter(*view, *pod, &ok);
        if (metrics_ != nullptr) metrics_->Record(Verb::kFilter, ok, Clock::now() - t0);
        return reply;
      }
    }
  }
  auto args = ParseExtenderArgs(body);
  if (!args) {
    reply = BadRequest(args.error());
  } else {
    FilterAnswer answer;
    size_t narrowed = 0;
    if (!ready()) {
      answer.error = kNotReady;
    } else if (auto req = RequestOf(args->pod); !req) {
      for (const std::string& n : args->node_names) {
        answer.unresolvable[n] = "vgpu: invalid GPU request: " + req.error().message();
      }
    } else {
      const std::string uid = MetaString(args->pod, "uid");
      const std::string ns = MetaString(args->pod, "namespace");
      const std::string name = MetaString(args->pod, "name");
      FilterResult f = state_->Filter(*req, args->node_names, PodRef{uid, ns, name});
      answer.feasible = std::move(f.feasible);
      answer.failed = std::move(f.failed);
      answer.unresolvable = std::move(f.unresolvable);
      narrowed = f.narrowed;
    }
    if (metrics_ != nullptr) {
      metrics_->nodes_feasible += answer.feasible.size();
      metrics_->nodes_failed += answer.failed.size();
      metrics_->nodes_unresolvable += answer.unresolvable.size() - narrowed;
      metrics_->nodes_narrowed += narrowed;
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
  if (ready()) {
    if (auto view = ScanExtenderArgsView(body)) {
      if (auto pod = ParsedPodOf(view->pod)) {
        std::vector<int64_t> scores(view->node_names.size(), 0);
        if (pod->request) {
          scores = state_->ScoreViews(PodRef{pod->uid, pod->ns, pod->name}, *pod->request,
                                      view->node_names);
        }
        reply.body = HostPriorityListJson(view->node_names, scores);
        if (metrics_ != nullptr) metrics_->Record(Verb::kPrioritize, true, Clock::now() - t0);
        return reply;
      }
    }
  }
  auto args = ParseExtenderArgs(body);
  if (!args) {
    reply = BadRequest(args.error());
  } else if (!ready()) {
    reply = {503, Json{{"Error", kNotReady}}.dump()};
  } else {
    std::vector<int64_t> scores(args->node_names.size(), 0);
    if (auto req = RequestOf(args->pod); req) {
      const std::string uid = MetaString(args->pod, "uid");
      const std::string ns = MetaString(args->pod, "namespace");
      const std::string name = MetaString(args->pod, "name");
      scores = state_->Score(*req, args->node_names, PodRef{uid, ns, name});
    }
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
    // Its CPU and memory count on the node at once, so the next decision sees them.
    auto ticket = state_->Assume(uid, args.pod_namespace, args.pod_name, *req, args.node);
    if (!ticket) {
      *outcome = BindOutcome::kApiError;
      return "vgpu: " + ticket.error().message();
    }
    if (client_ != nullptr) {
      Status s = client_->CreateBinding(args.pod_namespace, args.pod_name, uid, args.node);
      if (!s.ok()) {
        state_->BindFailed(uid, ticket->generation);
        *outcome = BindOutcome::kApiError;
        return "vgpu: binding " + who + ": " + s.message();
      }
    }
    state_->BindSucceeded(uid, ticket->generation);
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
