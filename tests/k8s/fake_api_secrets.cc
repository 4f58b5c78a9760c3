// FakeApiServer: secrets (create, read, whole-object update), as the webhook's certificate Secret
// uses them.
#include "fake_api_server.h"
#include "k8s/api/encoding.h"

namespace vgpu::k8s::testing {
namespace {

std::string MetaOf(const Json& o, const char* f) {
  if (!o.is_object() || !o.contains("metadata") || !o["metadata"].is_object()) return "";
  const Json& m = o["metadata"];
  return m.contains(f) && m[f].is_string() ? m[f].get<std::string>() : "";
}

std::string TypeOf(const Json& secret) {
  auto it = secret.find("type");
  return it != secret.end() && it->is_string() ? it->get<std::string>() : "Opaque";
}

// "" when the body is a Secret the API server would store; the reason otherwise.
std::string Invalid(const Json& secret, const std::string& ns, const std::string& name) {
  if (!secret.is_object()) return "the body is not an object";
  if (MetaOf(secret, "name").empty()) return "metadata.name: Required value";
  if (!name.empty() && MetaOf(secret, "name") != name) {
    return "metadata.name: the name of the object (" + MetaOf(secret, "name") +
           ") does not match the name on the URL (" + name + ")";
  }
  const std::string body_ns = MetaOf(secret, "namespace");
  if (!body_ns.empty() && body_ns != ns) {
    return "the namespace of the provided object does not match the namespace sent on the request";
  }
  if (secret.contains("data")) {
    if (!secret["data"].is_object()) return "data: must be an object";
    for (const auto& [key, value] : secret["data"].items()) {
      if (!value.is_string() || !Base64Decode(value.get<std::string>())) {
        return "data[" + key + "]: illegal base64 data";
      }
    }
  }
  return "";
}

}  // namespace

void FakeApiServer::RouteSecrets(const std::function<Handler(Handler)>& guard) {
  server_->Get(R"(/api/v1/namespaces/([^/]+)/secrets/([^/]+))",
               guard([this](const httplib::Request& req, httplib::Response& res) {
                 std::lock_guard<std::mutex> lock(mu_);
                 auto it = secrets_.find(Key(req.matches[1], req.matches[2]));
                 if (it == secrets_.end()) {
                   SendStatus(res, 404, "NotFound",
                              "secrets \"" + std::string(req.matches[2]) + "\" not found");
                   return;
                 }
                 res.set_content(it->second.dump(), "application/json");
               }));
  server_->Post(R"(/api/v1/namespaces/([^/]+)/secrets)",
                guard([this](const httplib::Request& req, httplib::Response& res) {
                  HandleCreateSecret(req.matches[1], req, res);
                }));
  server_->Put(R"(/api/v1/namespaces/([^/]+)/secrets/([^/]+))",
               guard([this](const httplib::Request& req, httplib::Response& res) {
                 HandleUpdateSecret(req.matches[1], req.matches[2], req, res);
               }));
}

void FakeApiServer::HandleCreateSecret(const std::string& ns, const httplib::Request& req,
                                       httplib::Response& res) {
  Json secret = Json::parse(req.body, nullptr, false);
  if (const std::string why = Invalid(secret, ns, ""); !why.empty()) {
    SendStatus(res, secret.is_discarded() ? 400 : 422, "Invalid", why);
    return;
  }
  const std::string name = MetaOf(secret, "name");
  std::lock_guard<std::mutex> lock(mu_);
  if (secrets_.count(Key(ns, name)) != 0) {
    SendStatus(res, 409, "AlreadyExists", "secrets \"" + name + "\" already exists");
    return;
  }
  secret["metadata"]["namespace"] = ns;
  secret["metadata"]["uid"] = "secret-uid-" + std::to_string(next_uid_++);
  secret["type"] = TypeOf(secret);
  Record("secrets", "ADDED", secret);
  secrets_[Key(ns, name)] = secret;
  res.status = 201;
  res.set_content(secret.dump(), "application/json");
}

void FakeApiServer::HandleUpdateSecret(const std::string& ns, const std::string& name,
                                       const httplib::Request& req, httplib::Response& res) {
  Json secret = Json::parse(req.body, nullptr, false);
  if (const std::string why = Invalid(secret, ns, name); !why.empty()) {
    SendStatus(res, secret.is_discarded() ? 400 : 422, "Invalid", why);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = secrets_.find(Key(ns, name));
  if (it == secrets_.end()) {
    SendStatus(res, 404, "NotFound", "secrets \"" + name + "\" not found");
    return;
  }
  const std::string rv = MetaOf(secret, "resourceVersion");
  if (!rv.empty() && rv != MetaOf(it->second, "resourceVersion")) {
    SendStatus(res, 409, "Conflict",
               "Operation cannot be fulfilled on secrets \"" + name +
                   "\": the object has been modified; please apply your changes to the latest "
                   "version and try again");
    return;
  }
  if (TypeOf(secret) != TypeOf(it->second)) {
    SendStatus(res, 422, "Invalid", "type: Invalid value: field is immutable");
    return;
  }
  secret["metadata"]["namespace"] = ns;
  secret["metadata"]["uid"] = it->second["metadata"]["uid"];
  secret["type"] = TypeOf(secret);
  Record("secrets", "MODIFIED", secret);
  it->second = secret;
  res.set_content(secret.dump(), "application/json");
}

void FakeApiServer::PutSecret(Json secret) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = Key(MetaOf(secret, "namespace"), MetaOf(secret, "name"));
  const bool exists = secrets_.count(key) != 0;
  if (!secret["metadata"].contains("uid")) {
    secret["metadata"]["uid"] = "secret-uid-" + std::to_string(next_uid_++);
  }
  Record("secrets", exists ? "MODIFIED" : "ADDED", secret);
  secrets_[key] = secret;
}

Json FakeApiServer::GetSecret(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = secrets_.find(Key(ns, name));
  return it == secrets_.end() ? Json(nullptr) : it->second;
}

}  // namespace vgpu::k8s::testing
