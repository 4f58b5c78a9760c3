#include "k8s/extender/extender_protocol.h"

#include <strings.h>

#include <unordered_set>

#include "common/json_string.h"
#include "k8s/api/json_scan.h"

namespace vgpu::k8s {
namespace {

Json* FindMutableKey(Json& object, std::string_view key) {
  return const_cast<Json*>(FindKey(static_cast<const Json&>(object), key));
}

}  // namespace

const Json* FindKey(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto exact = object.find(key);
  if (exact != object.end()) return &*exact;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string& k = it.key();
    if (k.size() == key.size() && strncasecmp(k.data(), key.data(), k.size()) == 0) return &*it;
  }
  return nullptr;
}

namespace {

// A request body as a JSON object, with the full parser's position for malformed text.
Result<Json> ParseBodyObject(std::string_view body) {
  if (JsonNestsDeeperThan(body)) {
    return Status::InvalidArgument("the request body nests arrays or objects deeper than " +
                                   std::to_string(kMaxJsonNesting) + " levels");
  }
  Json j;
  try {
    j = Json::parse(body);
  } catch (const Json::parse_error& e) {
    return Status::InvalidArgument("malformed JSON at byte " + std::to_string(e.byte) +
                                   " of the request body");
  }
  if (!j.is_object()) return Status::InvalidArgument("the request body is not a JSON object");
  return j;
}

bool KeyIs(std::string_view key, std::string_view want) {
  return key.size() == want.size() && strncasecmp(key.data(), want.data(), key.size()) == 0;
}

}  // namespace

std::optional<ExtenderArgsView> ScanExtenderArgsView(std::string_view body) {
  auto members = ScanObjectMembers(body);
  if (!members) return std::nullopt;
  std::string_view pod, names, nodes;
  for (const auto& [key, value] : *members) {
    if (KeyIs(key, "Pod")) {
      pod = value;
    } else if (KeyIs(key, "NodeNames")) {
      names = value;
    } else if (KeyIs(key, "Nodes")) {
      nodes = value;
    }
  }
  if (pod.empty() || pod.front() != '{' || names.empty() || names == "null" ||
      (!nodes.empty() && nodes != "null")) {
    return std::nullopt;
  }
  ExtenderArgsView view;
  view.pod = pod;
  view.node_names.reserve(names.size() / 16);
  if (!ScanStringArrayViews(names, &view.node_names)) return std::nullopt;
  return view;
}

// The fast path (see json_scan.h); std::nullopt sends the caller to the full parser.
std::optional<ExtenderArgs> ScanExtenderArgs(std::string_view body) {
  auto view = ScanExtenderArgsView(body);
  if (!view) return std::nullopt;
  ExtenderArgs args;
  if (JsonNestsDeeperThan(view->pod)) return std::nullopt;
  args.pod = Json::parse(view->pod, nullptr, false);
  if (!args.pod.is_object()) return std::nullopt;
  args.node_names.assign(view->node_names.begin(), view->node_names.end());
  return args;
}

Result<ExtenderArgs> ParseExtenderArgs(std::string_view body) {
  if (auto fast = ScanExtenderArgs(body)) return std::move(*fast);
  auto parsed = ParseBodyObject(body);
  if (!parsed) return parsed.error();
  Json& j = *parsed;
  ExtenderArgs args;
  Json* pod = FindMutableKey(j, "Pod");
  if (pod == nullptr || !pod->is_object()) {
    return Status::InvalidArgument("ExtenderArgs has no Pod object");
  }
  args.pod = std::move(*pod);
  const Json* names = FindKey(j, "NodeNames");
  const Json* nodes = FindKey(j, "Nodes");
  if (names != nullptr && names->is_array()) {
    args.node_names.reserve(names->size());
    for (const Json& n : *names) {
      if (!n.is_string()) return Status::InvalidArgument("NodeNames holds a non-string");
      args.node_names.push_back(n.get<std::string>());
    }
  } else if (nodes != nullptr && nodes->is_object()) {
    args.node_list = true;
    const Json* items = FindKey(*nodes, "items");
    if (items != nullptr && items->is_array()) {
      for (const Json& n : *items) {
        const std::string name = MetaString(n, "name");
        if (name.empty()) return Status::InvalidArgument("Nodes.items holds a node without a name");
        args.node_names.push_back(name);
        args.nodes.push_back(n);
      }
    }
  } else {
    return Status::InvalidArgument("ExtenderArgs has neither NodeNames nor Nodes");
  }
  return args;
}

std::string FilterResultJson(const FilterAnswer& a, const ExtenderArgs& args) {
  Json out = Json::object();
  if (args.node_list) {
    std::unordered_set<std::string> ok(a.feasible.begin(), a.feasible.end());
    Json items = Json::array();
    for (size_t i = 0; i < args.nodes.size(); ++i) {
      if (ok.count(args.node_names[i]) != 0) items.push_back(args.nodes[i]);
    }
    out["Nodes"] = {{"metadata", Json::object()}, {"items", std::move(items)}};
    out["NodeNames"] = nullptr;
  } else {
    // Written directly: the common case, with up to thousands of names.
    std::string text = "{\"Nodes\":null,\"NodeNames\":[";
    text.reserve(64 + 24 * (a.feasible.size() + a.failed.size() + a.unresolvable.size()));
    for (size_t i = 0; i < a.feasible.size(); ++i) {
      if (i > 0) text += ',';
      AppendJsonString(&text, a.feasible[i]);
    }
    text += ']';
    for (const auto& [field, map] : {std::pair{"FailedNodes", &a.failed},
                                     std::pair{"FailedAndUnresolvableNodes", &a.unresolvable}}) {
      text += ",\"";
      text += field;
      text += "\":{";
      bool first = true;
      for (const auto& [node, reason] : *map) {
        if (!first) text += ',';
        first = false;
        AppendJsonString(&text, node);
        text += ':';
        AppendJsonString(&text, reason);
      }
      text += '}';
    }
    text += ",\"Error\":";
    AppendJsonString(&text, a.error);
    text += '}';
    return text;
  }
  out["FailedNodes"] = a.failed;
  out["FailedAndUnresolvableNodes"] = a.unresolvable;
  out["Error"] = a.error;
  return out.dump();
}

namespace {

template <typename Names>
std::string PriorityList(const Names& hosts, const std::vector<int64_t>& scores) {
  std::string out;
  out.reserve(2 + hosts.size() * 40);
  out += '[';
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"Host\":";
    AppendJsonString(&out, hosts[i]);
    out += ",\"Score\":";
    const int64_t score = i < scores.size() ? scores[i] : 0;
    if (score >= 0 && score <= 9) {
      out += static_cast<char>('0' + score);
    } else {
      out += std::to_string(score);
    }
    out += '}';
  }
  out += ']';
  return out;
}

}  // namespace

std::string HostPriorityListJson(const std::vector<std::string>& hosts,
                                 const std::vector<int64_t>& scores) {
  return PriorityList(hosts, scores);
}

std::string HostPriorityListJson(std::span<const std::string_view> hosts,
                                 const std::vector<int64_t>& scores) {
  return PriorityList(hosts, scores);
}

Result<BindingArgs> ParseBindingArgs(std::string_view body) {
  auto parsed = ParseBodyObject(body);
  if (!parsed) return parsed.error();
  Json& j = *parsed;
  BindingArgs b;
  const auto str = [&](const char* key, std::string* out, bool required) -> Status {
    const Json* v = FindKey(j, key);
    if (v != nullptr && v->is_string()) *out = v->get<std::string>();
    if (required && out->empty()) {
      return Status::InvalidArgument(std::string("ExtenderBindingArgs has no ") + key);
    }
    return Status::Ok();
  };
  VGPU_RETURN_IF_ERROR(str("PodName", &b.pod_name, true));
  VGPU_RETURN_IF_ERROR(str("PodNamespace", &b.pod_namespace, true));
  VGPU_RETURN_IF_ERROR(str("PodUID", &b.pod_uid, false));
  VGPU_RETURN_IF_ERROR(str("Node", &b.node, true));
  return b;
}

std::string BindingResultJson(const std::string& error) { return Json{{"Error", error}}.dump(); }

}  // namespace vgpu::k8s
