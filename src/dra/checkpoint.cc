#include "dra/checkpoint.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/atomic_file.h"

namespace vgpu::dra {

using nlohmann::json;

Result<PreparedClaims> LoadCheckpoint(const std::string& path) {
  PreparedClaims out;
  std::ifstream in(path);
  if (!in) return out;
  std::stringstream text;
  text << in.rdbuf();
  const json j = json::parse(text.str(), nullptr, false);
  if (!j.is_object() || j.value("version", 0) != 1 || !j.contains("claims") ||
      !j["claims"].is_object()) {
    return Status::InvalidArgument("checkpoint " + path +
                                   ": not a vgpu DRA checkpoint (version 1)");
  }
  try {
    for (const auto& [uid, c] : j["claims"].items()) {
      PreparedClaim p;
      p.ref = {c.at("namespace").get<std::string>(), uid, c.at("name").get<std::string>()};
      p.slice = c.at("slice").get<std::string>();
      for (const json& d : c.at("devices")) {
        PreparedDevice pd;
        pd.requests = d.at("requests").get<std::vector<std::string>>();
        pd.pool = d.at("pool").get<std::string>();
        pd.device = d.at("device").get<std::string>();
        pd.uuid = d.at("uuid").get<std::string>();
        pd.parent_uuid = d.value("parentUUID", std::string());
        pd.cdi_ids = d.at("cdiDeviceIDs").get<std::vector<std::string>>();
        p.devices.push_back(std::move(pd));
      }
      out[uid] = std::move(p);
    }
  } catch (const json::exception& e) {
    return Status::InvalidArgument("checkpoint " + path + ": " + e.what());
  }
  return out;
}

Status SaveCheckpoint(const std::string& path, const PreparedClaims& claims) {
  json j = {{"version", 1}, {"claims", json::object()}};
  for (const auto& [uid, c] : claims) {
    json devices = json::array();
    for (const PreparedDevice& d : c.devices) {
      json entry = {{"requests", d.requests},
                    {"pool", d.pool},
                    {"device", d.device},
                    {"uuid", d.uuid},
                    {"cdiDeviceIDs", d.cdi_ids}};
      if (!d.parent_uuid.empty()) entry["parentUUID"] = d.parent_uuid;
      devices.push_back(std::move(entry));
    }
    j["claims"][uid] = {
        {"namespace", c.ref.ns}, {"name", c.ref.name}, {"slice", c.slice}, {"devices", devices}};
  }
  return WriteFileAtomically(path, j.dump(1), 0600);
}

}  // namespace vgpu::dra
