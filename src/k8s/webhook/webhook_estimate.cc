#include "k8s/webhook/webhook_estimate.h"

#include "estimate/pod_estimate.h"

namespace vgpu::k8s {

namespace {

std::string Escaped(std::string_view s) {  // RFC 6901
  std::string out;
  for (char c : s) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

bool NamesMemory(const Json& container, const ResourceNames& names) {
  if (!container.is_object() || !container.contains("resources")) return false;
  const Json& res = container["resources"];
  for (const char* section : {"limits", "requests"}) {
    if (!res.is_object() || !res.contains(section) || !res[section].is_object()) continue;
    if (res[section].contains(names.Memory()) || res[section].contains(names.MemoryPercent())) {
      return true;
    }
  }
  return false;
}

}  // namespace

EstimateFill FillFromEstimate(const Json& pod, const ResourceNames& names) {
  EstimateFill fill;
  const Json* annotations = nullptr;
  if (pod.is_object() && pod.contains("metadata") && pod["metadata"].is_object() &&
      pod["metadata"].contains("annotations") && pod["metadata"]["annotations"].is_object()) {
    annotations = &pod["metadata"]["annotations"];
  }
  if (annotations == nullptr || !annotations->contains(estimate::kEstimateAnnotation)) return fill;
  const Json& value = (*annotations)[estimate::kEstimateAnnotation];
  if (!value.is_string()) {
    fill.denial = std::string("vgpu: ") + estimate::kEstimateAnnotation + " must be a string";
    return fill;
  }
  const Json* containers = nullptr;
  if (pod.contains("spec") && pod["spec"].is_object() && pod["spec"].contains("containers")) {
    containers = &pod["spec"]["containers"];
  }
  const Json empty = Json::array();
  for (const Json& c : containers != nullptr && containers->is_array() ? *containers : empty) {
    if (NamesMemory(c, names)) {
      fill.warning = std::string("vgpu: the pod names ") + names.Memory() + " itself; " +
                     estimate::kEstimateAnnotation + " is not applied";
      return fill;
    }
  }
  auto estimate = estimate::EstimateForPod(value.get<std::string>(),
                                           containers != nullptr ? *containers : empty);
  if (!estimate) {
    fill.denial = "vgpu: " + estimate.error().message();
    return fill;
  }
  fill.applied = true;
  fill.pod = pod;
  const std::string pointer = "/spec/containers/" + std::to_string(estimate->container_index);
  const std::string mib = std::to_string(estimate->gpumem_mib);
  Json& c = fill.pod["spec"]["containers"][estimate->container_index];
  auto op = [&](std::string path, Json v) {
    fill.ops.push_back(Json{{"op", "add"}, {"path", std::move(path)}, {"value", v}});
  };
  if (!c.contains("resources") || !c["resources"].is_object()) {
    c["resources"] = Json{{"limits", Json{{names.Memory(), mib}}}};
    op(pointer + "/resources", c["resources"]);
  } else {
    Json& res = c["resources"];
    for (const char* section : {"limits", "requests"}) {
      const bool has = res.contains(section) && res[section].is_object();
      if (has) {
        res[section][names.Memory()] = mib;
        op(pointer + "/resources/" + section + "/" + Escaped(names.Memory()), mib);
      } else if (std::string_view(section) == "limits") {
        res["limits"] = Json{{names.Memory(), mib}};
        op(pointer + "/resources/limits", res["limits"]);
      }
    }
  }
  fill.pod["metadata"]["annotations"][estimate::kEstimateResultAnnotation] = estimate->record;
  op("/metadata/annotations/" + Escaped(estimate::kEstimateResultAnnotation), estimate->record);
  fill.change = "container '" + estimate->container_name + "': " + names.Memory() + "=" + mib +
                " from " + estimate::kEstimateAnnotation;
  return fill;
}

}  // namespace vgpu::k8s
