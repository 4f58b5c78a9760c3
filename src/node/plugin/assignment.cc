#include "node/plugin/assignment.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <set>

#include "node/plugin/unit_id.h"

namespace vgpu::node {
namespace {

using nlohmann::json;

bool ValidContainerName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

constexpr size_t kMaxGpusPerContainer = 16;

int64_t ParseRfc3339(const std::string& s) {
  std::tm tm{};
  if (strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

// "containerd://abc" -> "abc".
std::string StripScheme(const std::string& id) {
  size_t p = id.find("://");
  return p == std::string::npos ? id : id.substr(p + 3);
}

Result<PodInfo> PodFromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("pod: not a JSON object");
  PodInfo pod;
  const json meta = j.value("metadata", json::object());
  const json spec = j.value("spec", json::object());
  const json status = j.value("status", json::object());
  if (!meta.is_object() || !spec.is_object() || !status.is_object()) {
    return Status::InvalidArgument("pod: metadata, spec and status must be objects");
  }
  pod.ns = meta.value("namespace", "");
  pod.name = meta.value("name", "");
  pod.uid = meta.value("uid", "");
  if (pod.name.empty() || pod.uid.empty()) {
    return Status::InvalidArgument("pod: metadata.name and metadata.uid are required");
  }
  pod.deleting = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  if (meta.contains("creationTimestamp") && meta["creationTimestamp"].is_string()) {
    pod.created_unix = ParseRfc3339(meta["creationTimestamp"].get<std::string>());
  }
  if (meta.contains("annotations") && meta["annotations"].is_object()) {
    for (const auto& [k, v] : meta["annotations"].items()) {
      if (v.is_string()) pod.annotations[k] = v.get<std::string>();
    }
  }
  pod.node_name = spec.value("nodeName", "");
  if (spec.contains("containers") && spec["containers"].is_array()) {
    for (const json& c : spec["containers"]) {
      pod.containers.push_back(c.is_object() && c.contains("name") && c["name"].is_string()
                                   ? c["name"].get<std::string>()
                                   : std::string());
    }
  }
  pod.phase = status.value("phase", "");
  for (const char* key : {"containerStatuses", "initContainerStatuses"}) {
    if (!status.contains(key) || !status[key].is_array()) continue;
    for (const json& cs : status[key]) {
      if (!cs.is_object()) continue;
      std::string id = cs.value("containerID", "");
      std::string name = cs.value("name", "");
      if (!id.empty() && !name.empty()) pod.container_ids[StripScheme(id)] = name;
    }
  }
  return pod;
}

}  // namespace

std::vector<std::string> ContainerAssignment::GpuUuids() const {
  std::vector<std::string> ids;
  ids.reserve(devices.size());
  for (const AssignedDevice& d : devices) ids.push_back(d.uuid);
  std::sort(ids.begin(), ids.end());
  return ids;
}

Result<PodAssignment> FromScheduler(const k8s::PodAssignment& assignment,
                                    const std::vector<std::string>& app_containers) {
  const bool hami = assignment.source == k8s::AssignmentSource::kHami;
  PodAssignment out;
  out.node = assignment.node;
  out.source = assignment.source;
  if (assignment.containers.empty()) {
    return Status::InvalidArgument("containers: the assignment names no container");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < assignment.containers.size(); ++i) {
    const k8s::ContainerAssignment& c = assignment.containers[i];
    std::string where = "containers[" + std::to_string(i) + "]";
    ContainerAssignment ca;
    ca.name = c.name;
    ca.init = c.init;
    ca.priority = c.priority;
    ca.rank_order = c.rank_order && !hami;
    if (hami) {
      // "#<position in spec.containers>".
      size_t position = 0;
      const bool numbered = c.name.size() > 1 && c.name[0] == '#' &&
                            c.name.find_first_not_of("0123456789", 1) == std::string::npos &&
                            c.name.size() < 6;
      if (numbered) position = std::stoul(c.name.substr(1));
      where = "container " + c.name;
      if (!numbered || position >= app_containers.size()) {
        return Status::InvalidArgument(where + ": HAMi's allocation has an entry for container " +
                                       c.name + " but the pod spec lists " +
                                       std::to_string(app_containers.size()) + " container(s)");
      }
      ca.name = app_containers[position];
      where += " (" + ca.name + ")";
    }
    if (!ValidContainerName(ca.name)) {
      return Status::InvalidArgument(where + ".name: \"" + ca.name + "\" is not a container name");
    }
    if (!names.insert(ca.name).second) {
      return Status::InvalidArgument(where + ".name: container \"" + ca.name + "\" appears twice");
    }
    if (c.gpus.empty()) return Status::InvalidArgument(where + ".gpus: names no GPU");
    if (c.gpus.size() > kMaxGpusPerContainer) {
      return Status::InvalidArgument(where + ".gpus: more than " +
                                     std::to_string(kMaxGpusPerContainer) +
                                     " GPUs in one container");
    }
    std::set<std::string> gpus;
    for (size_t k = 0; k < c.gpus.size(); ++k) {
      const k8s::AssignedGpu& g = c.gpus[k];
      const std::string gw = where + ".gpus[" + std::to_string(k) + "]";
      if (g.uuid.empty()) return Status::InvalidArgument(gw + ".uuid: missing");
      if (g.uuid.size() > kMaxDeviceIdLength - 5) {
        return Status::InvalidArgument(gw + ".uuid: too long");
      }
      if (!gpus.insert(g.uuid).second) {
        return Status::InvalidArgument(gw + ".uuid: GPU " + g.uuid +
                                       " appears twice in one container");
      }
      if (g.memory_mib <= 0) {
        return Status::InvalidArgument(gw + ".memory_mib: must be positive, got " +
                                       std::to_string(g.memory_mib) + " (GPU " + g.uuid + ")");
      }
      if (g.memory_mib > (int64_t{1} << 30)) {
        return Status::InvalidArgument(gw + ".memory_mib: " + std::to_string(g.memory_mib) +
                                       " MiB is more than any GPU has (GPU " + g.uuid + ")");
      }
      if (g.cores < 1 || g.cores > 100) {
        return Status::InvalidArgument(gw + ".cores: must be 1..100, got " +
                                       std::to_string(g.cores));
      }
      AssignedDevice ad;
      ad.uuid = g.uuid;
      ad.index = g.index;
      ad.memory_bytes = static_cast<uint64_t>(g.memory_mib) << 20;
      ad.cores = g.cores;
      ad.mig = g.mig;
      ca.devices.push_back(std::move(ad));
    }
    out.containers.push_back(std::move(ca));
  }
  return out;
}

Result<std::optional<PodAssignment>> AssignmentOfPod(const PodInfo& pod) {
  // The scheduler's parser reads a Pod object; the daemon keeps only what it uses of one.
  json annotations = json::object();
  for (const char* key : {kAssignmentAnnotation, kHamiAllocatedAnnotation, kHamiNodeAnnotation}) {
    auto it = pod.annotations.find(key);
    if (it != pod.annotations.end()) annotations[key] = it->second;
  }
  if (annotations.empty()) return std::optional<PodAssignment>();
  const json object = {
      {"metadata", {{"namespace", pod.ns}, {"name", pod.name}, {"annotations", annotations}}},
      {"spec", {{"nodeName", pod.node_name}}}};
  auto parsed = k8s::AssignmentOfPod(object);
  if (!parsed) return parsed.error();
  if (!parsed->has_value()) return std::optional<PodAssignment>();
  auto ours = FromScheduler(**parsed, pod.containers);
  if (!ours) {
    const char* annotation = (*parsed)->source == k8s::AssignmentSource::kHami
                                 ? kHamiAllocatedAnnotation
                                 : kAssignmentAnnotation;
    return ours.error().WithContext("pod " + pod.Key() + ": annotation " + annotation);
  }
  return std::optional<PodAssignment>(std::move(*ours));
}

int64_t AssignedAtMillis(const PodInfo& pod) {
  if (auto it = pod.annotations.find(kAssignedAtAnnotation); it != pod.annotations.end()) {
    return ParseTimestampMillis(it->second);
  }
  if (auto it = pod.annotations.find(kHamiBindTimeAnnotation); it != pod.annotations.end()) {
    const std::string& s = it->second;
    if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos) {
      return 0;
    }
    return std::stoll(s) * 1000;
  }
  return 0;
}

Result<PodAssignment> ParseAssignment(std::string_view text) {
  auto parsed = k8s::ParseAssignment(text);
  if (!parsed) return parsed.error().WithContext(kAssignmentAnnotation);
  auto ours = FromScheduler(*parsed, {});
  if (!ours) return ours.error().WithContext(kAssignmentAnnotation);
  return ours;
}

std::string FormatAssignment(const PodAssignment& assignment) {
  k8s::PodAssignment a;
  a.node = assignment.node;
  // The node daemon does not use the scheduler's reservation; written as none.
  for (const ContainerAssignment& c : assignment.containers) {
    k8s::ContainerAssignment kc;
    kc.name = c.name;
    kc.init = c.init;
    kc.priority = c.priority;
    kc.rank_order = c.rank_order;
    for (const AssignedDevice& d : c.devices) {
      kc.gpus.push_back({d.uuid, std::max(d.index, 0), d.cores * 10,
                         static_cast<int64_t>(d.memory_bytes >> 20), d.cores, d.mig});
    }
    a.containers.push_back(std::move(kc));
  }
  return k8s::FormatAssignment(a);
}

int64_t ParseTimestampMillis(std::string_view text) {
  auto t = k8s::ParseTimestamp(text);
  if (!t) return 0;
  return std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count();
}

Result<PodInfo> ParsePodJson(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return Status::InvalidArgument("pod: not valid JSON");
  return PodFromJson(j);
}

Result<std::vector<PodInfo>> ParsePodListJson(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return Status::InvalidArgument("pod list: not valid JSON");
  const json* items = &j;
  if (j.is_object()) {
    if (!j.contains("items") || !j["items"].is_array()) {
      return Status::InvalidArgument("pod list: expected {\"items\": [...]} or an array");
    }
    items = &j["items"];
  } else if (!j.is_array()) {
    return Status::InvalidArgument("pod list: expected {\"items\": [...]} or an array");
  }
  std::vector<PodInfo> out;
  for (size_t i = 0; i < items->size(); ++i) {
    auto pod = PodFromJson((*items)[i]);
    if (!pod) return pod.error().WithContext("pod list item " + std::to_string(i));
    out.push_back(std::move(*pod));
  }
  return out;
}

}  // namespace vgpu::node
