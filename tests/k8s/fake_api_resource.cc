// FakeApiServer: resource.k8s.io/v1 objects as the DRA driver uses them: ResourceClaims (read)
// and ResourceSlices (list with selectors, create, whole-object update with resourceVersion
// preconditions, delete with a UID precondition). Creates and updates are checked against the
// counter rules of the release GET /version names (1.34: a device's counter sets in its own
// slice, at most 32 counters in all of them; 1.35: devices and sharedCounters never together).
#include "fake_api_server.h"

#include <cstdlib>
#include <set>

namespace vgpu::k8s::testing {
namespace {

constexpr const char* kGroup = "/apis/resource.k8s.io/v1";

std::string MetaOf(const Json& o, const char* f) {
  if (!o.is_object() || !o.contains("metadata") || !o["metadata"].is_object()) return "";
  const Json& m = o["metadata"];
  return m.contains(f) && m[f].is_string() ? m[f].get<std::string>() : "";
}

int Minor(const Json& version) {
  const std::string m = version.value("minor", "0");
  return std::atoi(m.c_str());
}

// What the API server of `version` refuses in a ResourceSlice's counters, as its validation says
// it (KEP-4815 changed the rules between 1.34 and 1.35); "" when it takes the slice.
std::string CounterRuleBroken(const Json& slice, const Json& version) {
  const Json spec = slice.value("spec", Json::object());
  const Json devices = spec.value("devices", Json::array());
  const Json sets = spec.value("sharedCounters", Json::array());
  if (Minor(version) >= 35) {
    if (!devices.empty() && !sets.empty()) {
      return "spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed";
    }
    return "";
  }
  size_t counters = 0;
  std::set<std::string> names;
  for (const Json& set : sets) {
    names.insert(set.value("name", ""));
    counters += set.value("counters", Json::object()).size();
  }
  if (counters > 32) {
    return "spec.sharedCounters: Invalid value: " + std::to_string(counters) +
           ": the total number of counters must not exceed 32";
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    for (const Json& c : devices[i].value("consumesCounters", Json::array())) {
      if (names.count(c.value("counterSet", "")) == 0) {
        return "spec.devices[" + std::to_string(i) +
               "].consumesCounters[0].counterSet: Invalid value: \"" + c.value("counterSet", "") +
               "\": must reference a counter set defined in the ResourceSlice sharedCounters";
      }
    }
  }
  return "";
}

}  // namespace

void FakeApiServer::RouteResources(const std::function<Handler(Handler)>& guard) {
  const std::string group = kGroup;
  server_->Get(group + R"(/namespaces/([^/]+)/resourceclaims/([^/]+))",
               guard([this](const httplib::Request& req, httplib::Response& res) {
                 std::lock_guard<std::mutex> lock(mu_);
                 auto it = claims_.find(Key(req.matches[1], req.matches[2]));
                 if (it == claims_.end()) {
                   SendStatus(res, 404, "NotFound",
                              "resourceclaims.resource.k8s.io \"" + std::string(req.matches[2]) +
                                  "\" not found");
                   return;
                 }
                 res.set_content(it->second.dump(), "application/json");
               }));
  server_->Get(group + "/resourceslices",
               guard([this](const httplib::Request& req, httplib::Response& res) {
                 HandleList("resourceslices", "", req, res);
               }));
  server_->Delete(group + R"(/resourceslices/([^/]+))",
                  guard([this](const httplib::Request& req, httplib::Response& res) {
                    const std::string name = req.matches[1];
                    const Json options = Json::parse(req.body, nullptr, false);
                    std::string uid;
                    if (options.is_object() && options.contains("preconditions") &&
                        options["preconditions"].is_object()) {
                      uid = options["preconditions"].value("uid", "");
                    }
                    std::lock_guard<std::mutex> lock(mu_);
                    auto it = slices_.find(name);
                    if (it == slices_.end()) {
                      SendStatus(res, 404, "NotFound",
                                 "resourceslices.resource.k8s.io \"" + name + "\" not found");
                      return;
                    }
                    if (!uid.empty() && uid != MetaOf(it->second, "uid")) {
                      SendStatus(res, 409, "Conflict",
                                 "Operation cannot be fulfilled on resourceslices \"" + name +
                                     "\": Precondition failed: UID in precondition: " + uid +
                                     ", UID in object meta: " + MetaOf(it->second, "uid"));
                      return;
                    }
                    Json s = it->second;
                    Record("resourceslices", "DELETED", s);
                    slices_.erase(it);
                    res.set_content(s.dump(), "application/json");
                  }));
  server_->Get(group + R"(/resourceslices/([^/]+))",
               guard([this](const httplib::Request& req, httplib::Response& res) {
                 std::lock_guard<std::mutex> lock(mu_);
                 auto it = slices_.find(req.matches[1]);
                 if (it == slices_.end()) {
                   SendStatus(res, 404, "NotFound",
                              "resourceslices.resource.k8s.io \"" + std::string(req.matches[1]) +
                                  "\" not found");
                   return;
                 }
                 res.set_content(it->second.dump(), "application/json");
               }));
  server_->Post(group + "/resourceslices",
                guard([this](const httplib::Request& req, httplib::Response& res) {
                  Json s = Json::parse(req.body, nullptr, false);
                  const std::string name = MetaOf(s, "name");
                  if (!s.is_object() || name.empty()) {
                    SendStatus(res, 422, "Invalid", "metadata.name: Required value");
                    return;
                  }
                  std::lock_guard<std::mutex> lock(mu_);
                  if (const std::string bad = CounterRuleBroken(s, version_); !bad.empty()) {
                    SendStatus(res, 422, "Invalid",
                               "ResourceSlice.resource.k8s.io \"" + name + "\" is invalid: " + bad);
                    return;
                  }
                  if (slices_.count(name) != 0) {
                    SendStatus(res, 409, "AlreadyExists",
                               "resourceslices.resource.k8s.io \"" + name + "\" already exists");
                    return;
                  }
                  s["metadata"]["uid"] = "slice-uid-" + std::to_string(next_uid_++);
                  Record("resourceslices", "ADDED", s);
                  slices_[name] = s;
                  res.status = 201;
                  res.set_content(s.dump(), "application/json");
                }));
  server_->Put(group + R"(/resourceslices/([^/]+))",
               guard([this](const httplib::Request& req, httplib::Response& res) {
                 Json s = Json::parse(req.body, nullptr, false);
                 const std::string name = req.matches[1];
                 if (!s.is_object() || MetaOf(s, "name") != name) {
                   SendStatus(res, 422, "Invalid", "metadata.name does not match the URL");
                   return;
                 }
                 std::lock_guard<std::mutex> lock(mu_);
                 auto it = slices_.find(name);
                 if (it == slices_.end()) {
                   SendStatus(res, 404, "NotFound",
                              "resourceslices.resource.k8s.io \"" + name + "\" not found");
                   return;
                 }
                 if (const std::string bad = CounterRuleBroken(s, version_); !bad.empty()) {
                   SendStatus(res, 422, "Invalid",
                              "ResourceSlice.resource.k8s.io \"" + name + "\" is invalid: " + bad);
                   return;
                 }
                 const std::string rv = MetaOf(s, "resourceVersion");
                 if (!rv.empty() && rv != MetaOf(it->second, "resourceVersion")) {
                   SendStatus(res, 409, "Conflict",
                              "Operation cannot be fulfilled on resourceslices \"" + name +
                                  "\": the object has been modified");
                   return;
                 }
                 s["metadata"]["uid"] = it->second["metadata"]["uid"];
                 Record("resourceslices", "MODIFIED", s);
                 it->second = s;
                 res.set_content(s.dump(), "application/json");
               }));
}

void FakeApiServer::PutResourceClaim(Json claim) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = Key(MetaOf(claim, "namespace"), MetaOf(claim, "name"));
  const bool exists = claims_.count(key) != 0;
  Record("resourceclaims", exists ? "MODIFIED" : "ADDED", claim);
  claims_[key] = claim;
}

void FakeApiServer::PutResourceSlice(Json slice) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name = MetaOf(slice, "name");
  const bool exists = slices_.count(name) != 0;
  if (MetaOf(slice, "uid").empty()) {
    slice["metadata"]["uid"] = "slice-uid-" + std::to_string(next_uid_++);
  }
  Record("resourceslices", exists ? "MODIFIED" : "ADDED", slice);
  slices_[name] = slice;
}

void FakeApiServer::SetVersion(Json version) {
  std::lock_guard<std::mutex> lock(mu_);
  version_ = std::move(version);
}

std::vector<Json> FakeApiServer::ResourceSlices() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Json> out;
  for (const auto& [name, s] : slices_) out.push_back(s);
  return out;
}

}  // namespace vgpu::k8s::testing
