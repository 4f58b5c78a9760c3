// The kube-scheduler extender wire format (k8s.io/kube-scheduler/extender/v1), as JSON:
//
//   filter / prioritize request  ExtenderArgs          {"Pod": {...}, "Nodes": {"items": [...]}}
//                                                       or, with nodeCacheCapable,
//                                                       {"Pod": {...}, "NodeNames": ["n1", ...]}
//   filter response              ExtenderFilterResult  {"Nodes"|"NodeNames": ..., "FailedNodes":
//                                                       {name: reason},
//                                                       "FailedAndUnresolvableNodes": {name:
//                                                       reason}, "Error": ""}
//   prioritize response          HostPriorityList      [{"Host": "n1", "Score": 0..10}, ...]
//   bind request                 ExtenderBindingArgs   {"PodName", "PodNamespace", "PodUID",
//   "Node"} bind response                ExtenderBindingResult {"Error": ""}
//
// The Go types carry no JSON tags, so kube-scheduler writes the Go field names; like Go's
// decoder, keys are matched case-insensitively ("nodenames" works too). Responses use the Go
// names and answer in the form asked: NodeNames for NodeNames, Nodes (the node objects) for Nodes.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "k8s/api/kube_client.h"

namespace vgpu::k8s {

inline constexpr int kMaxExtenderPriority = 10;

struct ExtenderArgs {
  Json pod;
  std::vector<std::string> node_names;
  bool node_list = false;  // "Nodes" was sent (full objects, kept in `nodes`)
  std::vector<Json> nodes;
};

// kInvalidArgument for malformed JSON (with the byte offset), a missing Pod, or neither Nodes
// nor NodeNames.
Result<ExtenderArgs> ParseExtenderArgs(std::string_view body);

// The nodeCacheCapable request read without a DOM: the Pod's JSON text and the node names, as
// views into `body`. std::nullopt for any other form or anything unusual (escaped names, a
// malformed body); ParseExtenderArgs then reads it or says what is wrong. The Pod text is not
// checked here: the caller parses it.
struct ExtenderArgsView {
  std::string_view pod;
  std::vector<std::string_view> node_names;
};
std::optional<ExtenderArgsView> ScanExtenderArgsView(std::string_view body);

struct FilterAnswer {
  std::vector<std::string> feasible;
  std::map<std::string, std::string> failed;
  std::map<std::string, std::string> unresolvable;
  std::string error;
};
std::string FilterResultJson(const FilterAnswer& answer, const ExtenderArgs& args);
std::string HostPriorityListJson(const std::vector<std::string>& hosts,
                                 const std::vector<int64_t>& scores);
std::string HostPriorityListJson(std::span<const std::string_view> hosts,
                                 const std::vector<int64_t>& scores);

struct BindingArgs {
  std::string pod_name, pod_namespace, pod_uid, node;
};
Result<BindingArgs> ParseBindingArgs(std::string_view body);
std::string BindingResultJson(const std::string& error);

// Looks a key up in a JSON object: exact match first, then ASCII case-insensitive (Go's rule).
const Json* FindKey(const Json& object, std::string_view key);

}  // namespace vgpu::k8s
