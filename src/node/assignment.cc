#include "node/assignment.h"

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>
#include <set>

#include "node/unit_id.h"

namespace vgpu::node {
namespace {

using nlohmann::json;

Status Bad(const std::string& path, const std::string& what) {
  return Status::InvalidArgument(std::string(kAssignmentAnnotation) + ": " + path + ": " + what);
}

bool ValidContainerName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return true;
}

// Reads a non-negative integer field; `max` bounds it.
Status ReadUint(const json& obj, const char* key, const std::string& path, uint64_t max,
                bool required, uint64_t* out) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    return required ? Bad(path + "." + key, "missing") : Status::Ok();
  }
  if (!it->is_number_integer() && !it->is_number_unsigned()) {
    return Bad(path + "." + key, "must be a whole number, got " + it->dump());
  }
  if (it->is_number_integer() && it->get<int64_t>() < 0) {
    return Bad(path + "." + key, "must not be negative, got " + it->dump());
  }
  uint64_t v = it->get<uint64_t>();
  if (v > max) return Bad(path + "." + key, "must be at most " + std::to_string(max));
  *out = v;
  return Status::Ok();
}

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

Result<PodAssignment> ParseAssignment(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("$", "not valid JSON");
  if (!j.is_object()) return Bad("$", "must be a JSON object");
  uint64_t version = 0;
  VGPU_RETURN_IF_ERROR(ReadUint(j, "version", "$", 1000, true, &version));
  if (version != 1) {
    return Bad("$.version", "version " + std::to_string(version) + " is not supported (1 is)");
  }
  PodAssignment out;
  if (j.contains("node") && j["node"].is_string()) out.node = j["node"].get<std::string>();
  auto cs = j.find("containers");
  if (cs == j.end() || !cs->is_array() || cs->empty()) {
    return Bad("$.containers", "must be a non-empty array");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < cs->size(); ++i) {
    const json& c = (*cs)[i];
    const std::string path = "$.containers[" + std::to_string(i) + "]";
    if (!c.is_object()) return Bad(path, "must be an object");
    ContainerAssignment ca;
    if (!c.contains("name") || !c["name"].is_string()) return Bad(path + ".name", "missing");
    ca.name = c["name"].get<std::string>();
    if (!ValidContainerName(ca.name)) {
      return Bad(path + ".name", "\"" + ca.name + "\" is not a container name");
    }
    if (!names.insert(ca.name).second) {
      return Bad(path + ".name", "container \"" + ca.name + "\" appears twice");
    }
    if (c.contains("init")) {
      if (!c["init"].is_boolean()) return Bad(path + ".init", "must be true or false");
      ca.init = c["init"].get<bool>();
    }
    if (c.contains("priority")) {
      const json& p = c["priority"];
      if (!p.is_number_integer() || p.get<int64_t>() < -1 || p.get<int64_t>() > 1) {
        return Bad(path + ".priority", "must be -1, 0 or 1, got " + p.dump());
      }
      ca.priority = static_cast<int>(p.get<int64_t>());
    }
    auto ds = c.find("gpus");
    if (ds == c.end() || !ds->is_array() || ds->empty()) {
      return Bad(path + ".gpus", "must be a non-empty array");
    }
    if (ds->size() > 16) return Bad(path + ".gpus", "more than 16 GPUs in one container");
    std::set<std::string> gpus;
    for (size_t k = 0; k < ds->size(); ++k) {
      const json& d = (*ds)[k];
      const std::string dpath = path + ".gpus[" + std::to_string(k) + "]";
      if (!d.is_object()) return Bad(dpath, "must be an object");
      AssignedDevice ad;
      if (!d.contains("uuid") || !d["uuid"].is_string() || d["uuid"].get<std::string>().empty()) {
        return Bad(dpath + ".uuid", "missing");
      }
      ad.uuid = d["uuid"].get<std::string>();
      if (ad.uuid.size() > kMaxDeviceIdLength - 5) return Bad(dpath + ".uuid", "too long");
      if (!gpus.insert(ad.uuid).second) {
        return Bad(dpath + ".uuid", "GPU " + ad.uuid + " appears twice in one container");
      }
      uint64_t index = 0, mib = 0, cores = 100;
      VGPU_RETURN_IF_ERROR(ReadUint(d, "index", dpath, 63, false, &index));
      VGPU_RETURN_IF_ERROR(ReadUint(d, "memory_mib", dpath, 1ULL << 30, true, &mib));
      VGPU_RETURN_IF_ERROR(ReadUint(d, "cores", dpath, 100, false, &cores));
      if (mib == 0) return Bad(dpath + ".memory_mib", "must be positive");
      if (cores == 0) return Bad(dpath + ".cores", "must be 1..100");
      ad.index = static_cast<int>(index);
      ad.memory_bytes = mib << 20;
      ad.cores = static_cast<int>(cores);
      ca.devices.push_back(std::move(ad));
    }
    out.containers.push_back(std::move(ca));
  }
  return out;
}

std::string FormatAssignment(const PodAssignment& assignment) {
  json j;
  j["version"] = 1;
  j["node"] = assignment.node;
  // The node daemon does not use the scheduler's reservation; written as none.
  j["reserved"] = {{"milli", 0}, {"memory_mib", 0}};
  j["containers"] = json::array();
  for (const ContainerAssignment& c : assignment.containers) {
    json jc;
    jc["name"] = c.name;
    jc["init"] = c.init;
    jc["priority"] = c.priority;
    jc["gpus"] = json::array();
    for (const AssignedDevice& d : c.devices) {
      jc["gpus"].push_back({{"uuid", d.uuid},
                            {"index", d.index},
                            {"milli", d.cores * 10},
                            {"memory_mib", d.memory_bytes >> 20},
                            {"cores", d.cores}});
    }
    j["containers"].push_back(std::move(jc));
  }
  return j.dump();
}

int64_t ParseTimestampMillis(std::string_view text) {
  std::string s(text);
  std::tm tm{};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return 0;
  int64_t ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  if (*rest == '.') {
    int64_t frac = 0;
    int digits = 0;
    for (++rest; *rest >= '0' && *rest <= '9'; ++rest) {
      if (digits < 3) {
        frac = frac * 10 + (*rest - '0');
        ++digits;
      }
    }
    while (digits < 3) {
      frac *= 10;
      ++digits;
    }
    ms += frac;
  }
  return ms;
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
