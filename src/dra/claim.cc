#include "dra/claim.h"

#include <algorithm>

#include "k8s/api/quantity.h"

namespace vgpu::dra {

using nlohmann::json;

namespace {

std::string Str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

Status Bad(const ClaimRef& ref, const std::string& field, const std::string& why) {
  return Status::InvalidArgument(ref.Describe() + ": " + field + ": " + why);
}

}  // namespace

bool OpaqueConfig::Applies(const std::string& request) const {
  return requests.empty() || std::find(requests.begin(), requests.end(), request) != requests.end();
}

Result<ClaimAllocation> ParseClaim(const json& claim, const ClaimRef& ref,
                                   const std::string& driver) {
  ClaimAllocation out;
  out.ref = ref;
  if (!claim.is_object()) return Bad(ref, "(object)", "not a JSON object");
  const std::string uid = Str(claim.value("metadata", json::object()), "uid");
  if (!ref.uid.empty() && uid != ref.uid) {
    return Bad(
        ref, "metadata.uid",
        "is \"" + uid + "\", kubelet asked for \"" + ref.uid + "\" (the claim was replaced)");
  }
  const json* alloc = nullptr;
  if (claim.contains("status") && claim["status"].is_object() &&
      claim["status"].contains("allocation") && claim["status"]["allocation"].is_object()) {
    alloc = &claim["status"]["allocation"];
  }
  if (alloc == nullptr) return Bad(ref, "status.allocation", "the claim is not allocated");
  const json devices = alloc->value("devices", json::object());
  if (!devices.is_object()) return Bad(ref, "status.allocation.devices", "must be an object");
  const json results = devices.value("results", json::array());
  if (!results.is_array()) return Bad(ref, "status.allocation.devices.results", "must be a list");
  for (size_t i = 0; i < results.size(); ++i) {
    const json& r = results[i];
    const std::string field = "status.allocation.devices.results[" + std::to_string(i) + "]";
    if (!r.is_object()) return Bad(ref, field, "must be an object");
    if (Str(r, "driver") != driver) continue;
    AllocatedDevice d;
    d.field = field;
    d.request = Str(r, "request");
    d.pool = Str(r, "pool");
    d.device = Str(r, "device");
    d.share_id = Str(r, "shareID");
    if (d.request.empty()) return Bad(ref, field + ".request", "missing");
    if (d.device.empty()) return Bad(ref, field + ".device", "missing");
    if (r.contains("consumedCapacity")) {
      const json& cc = r["consumedCapacity"];
      if (!cc.is_object()) return Bad(ref, field + ".consumedCapacity", "must be an object");
      for (const auto& [name, value] : cc.items()) {
        const std::string f = field + ".consumedCapacity." + name;
        if (!value.is_string()) return Bad(ref, f, "must be a quantity string");
        auto q = k8s::ParseWholeQuantity(value.get<std::string>());
        if (!q) return Bad(ref, f, q.error().message());
        if (name == "memory") {
          if (*q <= 0) return Bad(ref, f, "must be positive, got " + value.get<std::string>());
          d.has_memory = true;
          d.memory_bytes = *q;
        } else if (name == "cores") {
          if (*q < 1 || *q > 100) {
            return Bad(ref, f, "must be 1..100, got " + value.get<std::string>());
          }
          d.has_cores = true;
          d.cores = static_cast<int>(*q);
        }
      }
    }
    out.devices.push_back(std::move(d));
  }
  if (out.devices.empty()) {
    return Bad(ref, "status.allocation.devices.results", "no device of driver " + driver);
  }
  const json configs = devices.value("config", json::array());
  if (!configs.is_array()) return Bad(ref, "status.allocation.devices.config", "must be a list");
  std::vector<OpaqueConfig> from_class, from_claim;
  for (size_t j = 0; j < configs.size(); ++j) {
    const json& c = configs[j];
    const std::string field = "status.allocation.devices.config[" + std::to_string(j) + "]";
    if (!c.is_object()) return Bad(ref, field, "must be an object");
    const json opaque = c.value("opaque", json());
    if (!opaque.is_object() || Str(opaque, "driver") != driver) continue;
    OpaqueConfig oc;
    oc.field = field + ".opaque.parameters";
    oc.parameters = opaque.value("parameters", json());
    const json reqs = c.value("requests", json::array());
    if (!reqs.is_array()) return Bad(ref, field + ".requests", "must be a list");
    for (const json& q : reqs) {
      if (!q.is_string()) return Bad(ref, field + ".requests", "must be a list of names");
      oc.requests.push_back(q.get<std::string>());
    }
    (Str(c, "source") == "FromClass" ? from_class : from_claim).push_back(std::move(oc));
  }
  out.configs = std::move(from_class);
  for (auto& c : from_claim) out.configs.push_back(std::move(c));
  return out;
}

}  // namespace vgpu::dra
