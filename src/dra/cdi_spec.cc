#include "dra/cdi_spec.h"

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
      nodes.push_back(
          {{"path", d.container_path}, {"hostPath", d.host_path}, {"permissions", d.permissions}});
    }
    edits["deviceNodes"] = nodes;
  }
  return {
      {"cdiVersion", kCdiVersion},
      {"kind", kCdiKind},
      {"devices", json::array({{{"name", CdiDeviceName(claim_uid)}, {"containerEdits", edits}}})}};
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
