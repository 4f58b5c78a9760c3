// FakeApiServer: resource.k8s.io/v1 objects as the DRA driver uses them: ResourceClaims (read)
// and ResourceSlices (list, create, whole-object update with resourceVersion preconditions).
#include "fake_api_server.h"

namespace vgpu::k8s::testing {
namespace {

constexpr const char* kGroup = "/apis/resource.k8s.io/v1";

std::string MetaOf(const Json& o, const char* f) {
  if (!o.is_object() || !o.contains("metadata") || !o["metadata"].is_object()) return "";
  const Json& m = o["metadata"];
  return m.contains(f) && m[f].is_string() ? m[f].get<std::string>() : "";
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
               guard([this](const httplib::Request&, httplib::Response& res) {
                 std::lock_guard<std::mutex> lock(mu_);
                 Json list = {{"kind", "ResourceSliceList"},
                              {"apiVersion", "resource.k8s.io/v1"},
                              {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                              {"items", Json::array()}};
                 for (const auto& [name, s] : slices_) list["items"].push_back(s);
                 res.set_content(list.dump(), "application/json");
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

std::vector<Json> FakeApiServer::ResourceSlices() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Json> out;
  for (const auto& [name, s] : slices_) out.push_back(s);
  return out;
}

}  // namespace vgpu::k8s::testing
