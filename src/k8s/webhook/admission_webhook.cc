#include "k8s/webhook/admission_webhook.h"

#include <algorithm>

#include "common/log.h"
#include "k8s/api/encoding.h"
#include "k8s/api/json_scan.h"
#include "k8s/api/prometheus_text.h"
#include "k8s/webhook/webhook_estimate.h"

namespace vgpu::k8s {
namespace {

constexpr const char* kVisibleDevices = "NVIDIA_VISIBLE_DEVICES";
// RFC 6901: '~' -> "~0", '/' -> "~1".
std::string PointerToken(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Json Op(const char* op, std::string path, Json value) {
  return Json{{"op", op}, {"path", std::move(path)}, {"value", std::move(value)}};
}

const Json* Member(const Json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

std::string StringMember(const Json& o, const char* key) {
  const Json* v = Member(o, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

// What one container names of the managed resources. Values are read by the extender's parser
// (ParsePodGpuRequest); this only finds which containers name them and where they are.
struct ContainerScan {
  std::string pointer;  // "/spec/containers/0"
  std::string name;
  const Json* container = nullptr;
  bool managed = false;    // names any managed resource
  bool has_count = false;  // names <prefix>/gpu
  bool gets_gpu = false;   // the parser gives it one or more GPUs
  bool mig = false;        // it asks for a MIG profile (<prefix>/mig-<profile>): no count added
  bool privileged = false;
};

// Whether the container names a resource <prefix>/mig-<profile>.
bool NamesMig(const Json& c, const std::string& mig_prefix) {
  const Json* res = Member(c, "resources");
  if (res == nullptr) return false;
  for (const char* section : {"limits", "requests"}) {
    const Json* sec = Member(*res, section);
    if (sec == nullptr || !sec->is_object()) continue;
    for (const auto& [key, value] : sec->items()) {
      if (key.size() > mig_prefix.size() && key.starts_with(mig_prefix)) return true;
    }
  }
  return false;
}

bool Names(const Json& c, const std::string& resource) {
  const Json* res = Member(c, "resources");
  if (res == nullptr) return false;
  for (const char* section : {"limits", "requests"}) {
    const Json* sec = Member(*res, section);
    if (sec != nullptr && Member(*sec, resource.c_str()) != nullptr) return true;
  }
  return false;
}

ContainerScan Scan(const Json& c, std::string pointer, const RequestOptions& options) {
  const ResourceNames& n = options.names;
  ContainerScan s;
  s.pointer = std::move(pointer);
  s.container = &c;
  s.name = StringMember(c, "name");
  s.has_count = Names(c, n.Gpu());
  s.managed = s.has_count || Names(c, n.Memory()) || Names(c, n.MemoryPercent()) ||
              Names(c, n.Cores()) || Names(c, n.Priority()) || NamesMig(c, n.MigPrefix());
  if (s.managed) {
    // The container alone, as a pod, through the extender's parser.
    const Json one = {{"spec", {{"containers", Json::array({c})}}}};
    auto r = ParsePodGpuRequest(one, options);
    s.gets_gpu = r && r->HasGpus();
    s.mig = r && r->AsksMigProfile();
  }
  const Json* sc = Member(c, "securityContext");
  const Json* priv = sc != nullptr ? Member(*sc, "privileged") : nullptr;
  s.privileged = priv != nullptr && priv->is_boolean() && priv->get<bool>();
  return s;
}

// Ops that give `s` the resource `name` = "1" in its limits (and requests, when present).
void AddGpuCount(const ContainerScan& s, const std::string& name, Json* patch) {
  const Json* res = Member(*s.container, "resources");
  const std::string res_path = s.pointer + "/resources";
  if (res == nullptr || !res->is_object()) {
    patch->push_back(Op("add", res_path, Json{{"limits", Json{{name, "1"}}}}));
    return;
  }
  for (const char* section : {"limits", "requests"}) {
    const Json* sec = Member(*res, section);
    if (sec != nullptr && sec->is_object()) {
      patch->push_back(Op("add", res_path + "/" + section + "/" + PointerToken(name), Json("1")));
    } else if (std::string_view(section) == "limits") {
      patch->push_back(Op("add", res_path + "/limits", Json{{name, "1"}}));
    }
  }
}

// Ops that set NVIDIA_VISIBLE_DEVICES=none in the environment of `s`.
void HideGpus(const ContainerScan& s, Json* patch) {
  const Json entry = {{"name", kVisibleDevices}, {"value", "none"}};
  const Json* env = Member(*s.container, "env");
  if (env == nullptr || !env->is_array()) {
    patch->push_back(Op("add", s.pointer + "/env", Json::array({entry})));
    return;
  }
  for (size_t i = 0; i < env->size(); ++i) {
    if (StringMember((*env)[i], "name") != kVisibleDevices) continue;
    if (StringMember((*env)[i], "value") == "none" && !(*env)[i].contains("valueFrom")) return;
    patch->push_back(Op("replace", s.pointer + "/env/" + std::to_string(i), entry));
    return;
  }
  patch->push_back(Op("add", s.pointer + "/env/-", entry));
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

AdmissionWebhook::AdmissionWebhook(WebhookOptions options) : options_(std::move(options)) {}

bool AdmissionWebhook::MayReplace(const std::string& scheduler) const {
  if (scheduler.empty()) return true;
  const auto& r = options_.replace_schedulers;
  return std::find(r.begin(), r.end(), scheduler) != r.end() ||
         std::find(r.begin(), r.end(), "*") != r.end();
}

AdmissionWebhook::Mutation AdmissionWebhook::MutatePod(const Json& pod) const {
  // vgpu.io/estimate: the memory request comes from the estimate (webhook_estimate.h).
  EstimateFill fill = FillFromEstimate(pod, options_.names);
  if (!fill.denial.empty()) {
    Mutation m;
    m.outcome = Mutation::Outcome::kDenied;
    m.denial = fill.denial;
    return m;
  }
  if (!fill.applied) {
    Mutation m = MutateRequests(pod);
    if (!fill.warning.empty()) m.warnings.push_back(fill.warning);
    return m;
  }
  Mutation m = MutateRequests(fill.pod);
  if (m.outcome != Mutation::Outcome::kDenied && m.outcome != Mutation::Outcome::kSkipped) {
    for (Json& op : m.patch) fill.ops.push_back(std::move(op));
    m.patch = std::move(fill.ops);
    m.changes.insert(m.changes.begin(), fill.change);
    m.outcome = Mutation::Outcome::kPatched;
  }
  return m;
}

AdmissionWebhook::Mutation AdmissionWebhook::MutateRequests(const Json& pod) const {
  Mutation m;
  const Json* spec = Member(pod, "spec");
  if (spec == nullptr || !spec->is_object()) {
    m.warnings.push_back("vgpu: the pod has no spec; admitted unchanged");
    return m;
  }
  RequestOptions request;
  request.names = options_.names;
  std::vector<ContainerScan> scans;
  for (const char* list : {"initContainers", "containers"}) {
    const Json* cs = Member(*spec, list);
    if (cs == nullptr || !cs->is_array()) continue;
    for (size_t i = 0; i < cs->size(); ++i) {
      if (!(*cs)[i].is_object()) continue;
      scans.push_back(
          Scan((*cs)[i], std::string("/spec/") + list + "/" + std::to_string(i), request));
    }
  }
  const bool gpu_pod =
      std::any_of(scans.begin(), scans.end(), [](const ContainerScan& s) { return s.managed; });
  const Json* sched = Member(*spec, "schedulerName");
  const std::string scheduler =
      sched != nullptr && sched->is_string() ? sched->get<std::string>() : "";
  const bool ours = scheduler == options_.scheduler_name;
  if (!ours && !MayReplace(scheduler)) {
    if (gpu_pod) {
      m.outcome = Mutation::Outcome::kSkipped;
      m.warnings.push_back("vgpu: the pod asks for " + options_.names.prefix +
                           " GPU resources but names scheduler '" + scheduler +
                           "'; vgpu does not place it");
    }
    return m;
  }
  if (gpu_pod) {
    const std::string node = StringMember(*spec, "nodeName");
    if (!node.empty()) {
      m.outcome = Mutation::Outcome::kSkipped;
      m.warnings.push_back("vgpu: the pod names node '" + node +
                           "', so no scheduler places it; vgpu reserves no GPU share for it");
      return m;
    }
    // The extender's own reading: what it could never place is refused now, with its reason.
    if (auto parsed = ParsePodGpuRequest(pod, request); !parsed) {
      m.outcome = Mutation::Outcome::kDenied;
      m.denial = "vgpu: " + parsed.error().message();
      return m;
    }
    if (!ours) {
      m.patch.push_back(Op(sched != nullptr ? "replace" : "add", "/spec/schedulerName",
                           Json(options_.scheduler_name)));
      m.changes.push_back("schedulerName " + (scheduler.empty() ? "(none)" : scheduler) + " -> " +
                          options_.scheduler_name);
    }
    for (const ContainerScan& s : scans) {
      if (s.gets_gpu && !s.has_count && !s.mig) {
        AddGpuCount(s, options_.names.Gpu(), &m.patch);
        m.changes.push_back("container '" + s.name + "': " + options_.names.Gpu() + "=1");
      }
      if (s.privileged) {
        m.warnings.push_back("vgpu: container '" + s.name +
                             "' is privileged: it can reach every GPU of its node, outside any "
                             "slice");
      }
    }
  } else if (options_.cpu_pods && !ours && StringMember(*spec, "nodeName").empty()) {
    // A pod without GPUs goes to vgpu too: where its CPU lands decides which GPUs stay usable.
    m.patch.push_back(Op(sched != nullptr ? "replace" : "add", "/spec/schedulerName",
                         Json(options_.scheduler_name)));
    m.changes.push_back("schedulerName " + (scheduler.empty() ? "(none)" : scheduler) + " -> " +
                        options_.scheduler_name + " (a pod without GPUs)");
  }
  if (options_.hide_gpus) {
    for (const ContainerScan& s : scans) {
      if (s.gets_gpu) continue;
      const size_t before = m.patch.size();
      HideGpus(s, &m.patch);
      if (m.patch.size() != before) {
        m.changes.push_back("container '" + s.name + "': " + kVisibleDevices + "=none");
      }
    }
  }
  if (!m.patch.empty()) m.outcome = Mutation::Outcome::kPatched;
  return m;
}

namespace {

// The AdmissionReview around `response`.
std::string Wrap(const std::string& api_version, Json response) {
  const Json out = {
      {"apiVersion", api_version}, {"kind", "AdmissionReview"}, {"response", std::move(response)}};
  return out.dump();
}

}  // namespace

AdmissionWebhook::Reply AdmissionWebhook::Review(std::string_view body) {
  std::string api_version = "admission.k8s.io/v1";
  std::string uid;
  std::string problem;  // why the body is malformed ("" = it is not)
  std::string warning;  // a readable review the webhook does not handle
  std::string label;
  Mutation m;
  const bool too_deep = JsonNestsDeeperThan(body);
  Json review = too_deep ? Json(nullptr) : Json::parse(body, nullptr, /*allow_exceptions=*/false);
  const Json* request = nullptr;
  if (too_deep) {
    problem = "the request body nests deeper than " + std::to_string(kMaxJsonNesting) + " levels";
  } else if (review.is_discarded()) {
    problem = "the request body is not JSON";
  } else if (!review.is_object()) {
    problem = "the request body is not a JSON object";
  } else {
    const std::string v = StringMember(review, "apiVersion");
    if (v == "admission.k8s.io/v1beta1") api_version = v;
    request = Member(review, "request");
    if (request != nullptr) uid = StringMember(*request, "uid");
    if (StringMember(review, "kind") != "AdmissionReview" ||
        (v != "admission.k8s.io/v1" && v != "admission.k8s.io/v1beta1")) {
      problem = "expected an admission.k8s.io/v1 AdmissionReview, got apiVersion '" + v +
                "', kind '" + StringMember(review, "kind") + "'";
    } else if (request == nullptr || !request->is_object()) {
      problem = "the AdmissionReview has no request object";
    } else if (uid.empty()) {
      problem = "the AdmissionReview's request has no uid";
    }
  }
  if (problem.empty()) {
    const Json* res = Member(*request, "resource");
    const std::string group = res != nullptr ? StringMember(*res, "group") : "";
    const std::string resource = res != nullptr ? StringMember(*res, "resource") : "";
    const Json* object = Member(*request, "object");
    const Json* meta = object != nullptr ? Member(*object, "metadata") : nullptr;
    const std::string name = meta != nullptr ? StringMember(*meta, "name") : "";
    const std::string generate = meta != nullptr ? StringMember(*meta, "generateName") : "";
    label = StringMember(*request, "namespace") + "/" + (name.empty() ? generate + "*" : name);
    if (!group.empty() || resource != "pods") {
      warning = "unexpected resource '" + (group.empty() ? "" : group + "/") + resource +
                "' (the webhook handles pods)";
    } else if (!StringMember(*request, "subResource").empty() ||
               StringMember(*request, "operation") != "CREATE") {
      // Nothing to do: the scheduler name is fixed at creation.
    } else if (object == nullptr || !object->is_object() ||
               (Member(*object, "kind") != nullptr && StringMember(*object, "kind") != "Pod")) {
      problem = "request.object of a pod CREATE is not a Pod";
    } else {
      m = MutatePod(*object);
    }
  }
  if (!problem.empty()) {
    ++errors_;
    VGPU_LOG_WARN("webhook: malformed review (uid '%s'): %s", uid.c_str(), problem.c_str());
    Json response = {{"uid", uid},
                     {"allowed", false},
                     {"status",
                      {{"code", 400},
                       {"reason", "BadRequest"},
                       {"message", "vgpu webhook: malformed AdmissionReview: " + problem}}}};
    return Reply{400, Wrap(api_version, std::move(response))};
  }
  Json response = {{"uid", uid}, {"allowed", true}};
  if (!warning.empty()) {
    ++errors_;
    VGPU_LOG_WARN("webhook: %s; admitted unchanged (uid '%s')", warning.c_str(), uid.c_str());
    response["warnings"] = Json::array({"vgpu webhook: " + warning + "; admitted unchanged"});
    return Reply{200, Wrap(api_version, std::move(response))};
  }
  switch (m.outcome) {
    case Mutation::Outcome::kPatched:
      ++patched_;
      VGPU_LOG_INFO("webhook: pod %s: %s", label.c_str(), Join(m.changes, "; ").c_str());
      response["patchType"] = "JSONPatch";
      response["patch"] = Base64Encode(m.patch.dump());
      break;
    case Mutation::Outcome::kSkipped:
      ++skipped_;
      VGPU_LOG_INFO("webhook: pod %s left alone: %s", label.c_str(),
                    Join(m.warnings, "; ").c_str());
      break;
    case Mutation::Outcome::kDenied:
      ++denied_;
      VGPU_LOG_INFO("webhook: pod %s refused: %s", label.c_str(), m.denial.c_str());
      response["allowed"] = false;
      response["status"] = {{"code", 422}, {"reason", "Invalid"}, {"message", m.denial}};
      break;
    case Mutation::Outcome::kUnchanged:
      ++unchanged_;
      break;
  }
  if (!m.warnings.empty()) response["warnings"] = m.warnings;
  return Reply{200, Wrap(api_version, std::move(response))};
}

uint64_t AdmissionWebhook::count(Mutation::Outcome outcome) const {
  switch (outcome) {
    case Mutation::Outcome::kPatched:
      return patched_.load();
    case Mutation::Outcome::kSkipped:
      return skipped_.load();
    case Mutation::Outcome::kUnchanged:
      return unchanged_.load();
    case Mutation::Outcome::kDenied:
      return denied_.load();
  }
  return 0;
}

void AdmissionWebhook::RenderMetrics(std::string* out) const {
  constexpr const char* kName = "vgpu_scheduler_webhook_requests_total";
  RenderHeader(out, kName, "counter",
               "Admission reviews answered: patched, unchanged, skipped (a GPU pod vgpu does not "
               "place), denied (requests that can never be placed), error (malformed or not a "
               "pod).");
  RenderSample(out, kName, "result=\"patched\"", static_cast<double>(patched_.load()));
  RenderSample(out, kName, "result=\"unchanged\"", static_cast<double>(unchanged_.load()));
  RenderSample(out, kName, "result=\"skipped\"", static_cast<double>(skipped_.load()));
  RenderSample(out, kName, "result=\"denied\"", static_cast<double>(denied_.load()));
  RenderSample(out, kName, "result=\"error\"", static_cast<double>(errors_.load()));
}

}  // namespace vgpu::k8s
