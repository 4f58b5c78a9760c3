#include "dra/cdi_spec.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/atomic_file.h"

namespace vgpu::dra {

using nlohmann::json;

std::string CdiDeviceName(const std::string& claim_uid) { return "claim-" + claim_uid; }

std::string CdiDeviceId(const std::string& claim_uid) {
  return std::string(kCdiKind) + "=" + CdiDeviceName(claim_uid);
}

std::string CdiSpecPath(const std::string& dir, const std::string& claim_uid) {
  return dir + "/vgpu.io-gpu_" + claim_uid + ".json";
}

namespace {

// Every containerEdits object of a spec: the spec's own and each device's.
std::vector<const json*> AllEdits(const json& spec) {
  std::vector<const json*> out;
  if (spec.contains("containerEdits") && spec["containerEdits"].is_object()) {
    out.push_back(&spec["containerEdits"]);
  }
  if (!spec.contains("devices") || !spec["devices"].is_array()) return out;
  for (const json& d : spec["devices"]) {
    if (d.is_object() && d.contains("containerEdits") && d["containerEdits"].is_object()) {
      out.push_back(&d["containerEdits"]);
    }
  }
  return out;
}

bool AnyEntryHas(const json& edits, const char* list, const char* field) {
  if (!edits.contains(list) || !edits[list].is_array()) return false;
  for (const json& e : edits[list]) {
    if (e.is_object() && e.contains(field) && !(e[field].is_string() && e[field] == "")) {
      return true;
    }
  }
  return false;
}

bool NotEmpty(const json& object, const char* field) {
  return object.is_object() && object.contains(field) && !object[field].is_null() &&
         !object[field].empty();
}

}  // namespace

std::string MinimumCdiVersion(const json& spec) {
  int minor = 3;  // 0.<minor>.0
  if (!spec.is_object()) return "0.3.0";
  const auto at_least = [&minor](int m) { minor = std::max(minor, m); };
  for (const json* e : AllEdits(spec)) {
    if (AnyEntryHas(*e, "mounts", "type")) at_least(4);
    if (AnyEntryHas(*e, "deviceNodes", "hostPath")) at_least(5);
    if (NotEmpty(*e, "intelRdt") || NotEmpty(*e, "additionalGids")) at_least(7);
  }
  if (NotEmpty(spec, "annotations")) at_least(6);
  for (const json& d : spec.value("devices", json::array())) {
    const std::string name = d.value("name", "");
    if (!name.empty() && !std::isalpha(static_cast<unsigned char>(name[0]))) at_least(5);
    if (NotEmpty(d, "annotations")) at_least(6);
  }
  const std::string kind = spec.value("kind", "");
  if (const size_t slash = kind.find('/');
      slash != std::string::npos && kind.find('.', slash) != std::string::npos) {
    at_least(6);
  }
  return "0." + std::to_string(minor) + ".0";
}

json CdiSpec(const std::string& claim_uid, const node::ContainerAllocation& allocation) {
  json edits = json::object();
  json env = json::array();
  for (const auto& [k, v] : allocation.envs) env.push_back(k + "=" + v);
  edits["env"] = env;
  json mounts = json::array();
  for (const auto& m : allocation.mounts) {
    json options = json::array({m.read_only ? "ro" : "rw", "nosuid", "nodev", "bind"});
    mounts.push_back(
        {{"hostPath", m.host_path}, {"containerPath", m.container_path}, {"options", options}});
  }
  edits["mounts"] = mounts;
  if (!allocation.devices.empty()) {
    json nodes = json::array();
    for (const auto& d : allocation.devices) {
      json n = {{"path", d.container_path}, {"permissions", d.permissions}};
      // hostPath defaults to path; spelled out only when it differs (it needs 0.5.0).
      if (d.host_path != d.container_path) n["hostPath"] = d.host_path;
      nodes.push_back(n);
    }
    edits["deviceNodes"] = nodes;
  }
  json spec = {
      {"kind", kCdiKind},
      {"devices", json::array({{{"name", CdiDeviceName(claim_uid)}, {"containerEdits", edits}}})}};
  spec["cdiVersion"] = MinimumCdiVersion(spec);
  return spec;
}

Status WriteCdiSpec(const std::string& dir, const std::string& claim_uid,
                    const node::ContainerAllocation& allocation) {
  return WriteFileAtomically(CdiSpecPath(dir, claim_uid), CdiSpec(claim_uid, allocation).dump(2),
                             0644);
}

Status RemoveCdiSpec(const std::string& dir, const std::string& claim_uid) {
  const std::string path = CdiSpecPath(dir, claim_uid);
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (ec) return Status::Internal("remove " + path + ": " + ec.message());
  return Status::Ok();
}

}  // namespace vgpu::dra
