#include "fake_api_server.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

namespace vgpu::k8s::testing {
namespace {

using namespace std::chrono_literals;

std::string Meta(const Json& o, const char* f) {
  if (!o.is_object() || !o.contains("metadata") || !o["metadata"].is_object()) return "";
  const Json& m = o["metadata"];
  return m.contains(f) && m[f].is_string() ? m[f].get<std::string>() : "";
}

// Value at a dotted path ("spec.nodeName") as a string, "" when absent.
std::string FieldAt(const Json& o, const std::string& path) {
  const Json* cur = &o;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (!cur->is_object() || !cur->contains(part)) return "";
    cur = &(*cur)[part];
  }
  return cur->is_string() ? cur->get<std::string>() : "";
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// Supports "k=v", "k==v", "k!=v" terms joined by ','; `get` reads a key.
template <typename Get>
bool MatchesSelector(const std::string& selector, Get get) {
  for (const std::string& term : Split(selector, ',')) {
    const size_t ne = term.find("!=");
    if (ne != std::string::npos) {
      if (get(term.substr(0, ne)) == term.substr(ne + 2)) return false;
      continue;
    }
    const size_t eq = term.find('=');
    if (eq == std::string::npos) {
      if (get(term).empty()) return false;  // existence
      continue;
    }
    const size_t vstart = term.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
    if (get(term.substr(0, eq)) != term.substr(vstart)) return false;
  }
  return true;
}

bool Matches(const Json& o, const httplib::Request& req) {
  const std::string labels = req.get_param_value("labelSelector");
  const std::string fields = req.get_param_value("fieldSelector");
  if (!labels.empty() && !MatchesSelector(labels, [&](const std::string& k) -> std::string {
        const Json& m = o["metadata"];
        if (!m.contains("labels") || !m["labels"].contains(k)) return "";
        return m["labels"][k].get<std::string>();
      })) {
    return false;
  }
  if (!fields.empty() &&
      !MatchesSelector(fields, [&](const std::string& k) { return FieldAt(o, k); })) {
    return false;
  }
  return true;
}

}  // namespace

Json MakePod(const std::string& ns, const std::string& name, const std::string& uid,
             const Json& containers, const Json& annotations) {
  return Json{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}, {"annotations", annotations}}},
      {"spec", {{"containers", containers}, {"schedulerName", "vgpu-scheduler"}}},
      {"status", {{"phase", "Pending"}}}};
}

Json MakeNode(const std::string& name, const Json& annotations, const Json& labels) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata",
               {{"name", name},
                {"uid", "node-uid-" + name},
                {"annotations", annotations},
                {"labels", labels}}},
              {"status", {{"allocatable", {{"cpu", "64"}, {"memory", "512Gi"}}}}}};
}

FakeApiServer::FakeApiServer(Options options) : options_(std::move(options)) {
  pki_ = GenerateTestPki();
  // Without its directory the TLS server has no certificate: the tests that talk to it fail.
  if (!dir_.ok()) std::fprintf(stderr, "FakeApiServer: %s\n", dir_.error().c_str());
  const std::string& dir = dir_.path();
  WriteFile(dir + "/server.crt", pki_.server_cert_pem);
  WriteFile(dir + "/server.key", pki_.server_key_pem);
  WriteFile(dir + "/ca.crt", pki_.ca_cert_pem);
  if (options_.tls) {
    server_ = std::make_unique<httplib::SSLServer>(
        (dir + "/server.crt").c_str(), (dir + "/server.key").c_str(),
        options_.require_client_cert ? (dir + "/ca.crt").c_str() : nullptr);
  } else {
    server_ = std::make_unique<httplib::Server>();
  }
  const int threads = options_.threads;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_keep_alive_max_count(100000);
  server_->set_keep_alive_timeout(30);
  // As the real API server (Go sets TCP_NODELAY): without it a response written in two parts
  // waits for the client's delayed ACK, 40 ms a request.
  server_->set_tcp_nodelay(true);

  const auto guard = [this](auto handler) {
    return [this, handler](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++request_counts_[req.method];
        ++request_counts_[""];
      }
      if (!Authorized(req, res) || InjectedFault(req, res)) return;
      handler(req, res);
    };
  };
  const auto get_object = [this](const std::string& kind, const std::string& key,
                                 httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& store = Store(kind);
    auto it = store.find(key);
    if (it == store.end()) {
      SendStatus(res, 404, "NotFound", kind + " \"" + key + "\" not found");
      return;
    }
    res.set_content(it->second.dump(), "application/json");
  };
  const auto list_or_watch = [this](const std::string& kind, const std::string& ns,
                                    const httplib::Request& req, httplib::Response& res) {
    const std::string w = req.get_param_value("watch");
    if (w == "1" || w == "true") {
      HandleWatch(kind, ns, req, res);
    } else {
      HandleList(kind, ns, req, res);
    }
  };

  server_->Get("/api/v1/nodes",
               guard([list_or_watch](const httplib::Request& req, httplib::Response& res) {
                 list_or_watch("nodes", "", req, res);
               }));
  server_->Get(R"(/api/v1/nodes/([^/]+))",
               guard([get_object](const httplib::Request& req, httplib::Response& res) {
                 get_object("nodes", req.matches[1], res);
               }));
  server_->Patch(R"(/api/v1/nodes/([^/]+))",
                 guard([this](const httplib::Request& req, httplib::Response& res) {
                   HandlePatch("nodes", "", req.matches[1], req, res);
                 }));
  server_->Get("/api/v1/pods",
               guard([list_or_watch](const httplib::Request& req, httplib::Response& res) {
                 list_or_watch("pods", "", req, res);
               }));
  server_->Get(R"(/api/v1/namespaces/([^/]+)/pods)",
               guard([list_or_watch](const httplib::Request& req, httplib::Response& res) {
                 list_or_watch("pods", req.matches[1], req, res);
               }));
  server_->Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
               guard([this, get_object](const httplib::Request& req, httplib::Response& res) {
                 get_object("pods", Key(req.matches[1], req.matches[2]), res);
               }));
  server_->Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
                 guard([this](const httplib::Request& req, httplib::Response& res) {
                   HandlePatch("pods", req.matches[1], req.matches[2], req, res);
                 }));
  server_->Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
                guard([this](const httplib::Request& req, httplib::Response& res) {
                  HandleBinding(req.matches[1], req.matches[2], req, res);
                }));

  constexpr const char* kWebhookConfigs =
      R"(/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/([^/]+))";
  server_->Get(kWebhookConfigs,
               guard([get_object](const httplib::Request& req, httplib::Response& res) {
                 get_object("mutatingwebhookconfigurations", req.matches[1], res);
               }));
  server_->Patch(kWebhookConfigs,
                 guard([this](const httplib::Request& req, httplib::Response& res) {
                   HandlePatch("mutatingwebhookconfigurations", "", req.matches[1], req, res);
                 }));

  server_->Get("/version", guard([this](const httplib::Request&, httplib::Response& res) {
                 std::lock_guard<std::mutex> lock(mu_);
                 res.set_content(version_.dump(), "application/json");
               }));

  RouteSecrets([&guard](Handler h) -> Handler { return guard(std::move(h)); });
  RouteResources([&guard](Handler h) -> Handler { return guard(std::move(h)); });

  port_ = server_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(1ms);
}

FakeApiServer::~FakeApiServer() {
  stopping_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++drop_generation_;
  }
  cv_.notify_all();
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string FakeApiServer::url() const {
  return std::string(options_.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

KubeConfig FakeApiServer::ClientConfig() const {
  KubeConfig c;
  c.server = url();
  c.ca_pem = pki_.ca_cert_pem;
  c.token = options_.token;
  c.source = "fake API server";
  return c;
}

void FakeApiServer::SendStatus(httplib::Response& res, int code, const std::string& reason,
                               const std::string& message) {
  res.status = code;
  const Json body = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", Json::object()},
                     {"status", "Failure"}, {"message", message}, {"reason", reason},
                     {"code", code}};
  res.set_content(body.dump(), "application/json");
}

bool FakeApiServer::Authorized(const httplib::Request& req, httplib::Response& res) {
  if (options_.token.empty()) return true;
  if (req.get_header_value("Authorization") == "Bearer " + options_.token) return true;
  SendStatus(res, 401, "Unauthorized", "Unauthorized");
  return false;
}

bool FakeApiServer::InjectedFault(const httplib::Request& req, httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (!it->method.empty() && it->method != req.method) continue;
    const int status = it->status;
    if (--it->remaining <= 0) faults_.erase(it);
    if (status == 409) {
      SendStatus(res, 409, "Conflict",
                 "Operation cannot be fulfilled: the object has been modified; please apply your "
                 "changes to the latest version and try again");
    } else {
      SendStatus(res, status, "InjectedFault", "injected fault");
    }
    if (status == 429) res.set_header("Retry-After", "0");
    return true;
  }
  return false;
}

void FakeApiServer::Record(const std::string& kind, const std::string& type, Json& object) {
  ++rv_;
  object["metadata"]["resourceVersion"] = std::to_string(rv_);
  log_.push_back(Event{rv_, type, kind, object});
  cv_.notify_all();
}

void FakeApiServer::PutNode(Json node) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name = Meta(node, "name");
  const bool exists = nodes_.count(name) != 0;
  Record("nodes", exists ? "MODIFIED" : "ADDED", node);
  nodes_[name] = node;
}

void FakeApiServer::PutPod(Json pod) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = Key(Meta(pod, "namespace"), Meta(pod, "name"));
  const bool exists = pods_.count(key) != 0;
  Record("pods", exists ? "MODIFIED" : "ADDED", pod);
  pods_[key] = pod;
}

void FakeApiServer::DeletePod(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(Key(ns, name));
  if (it == pods_.end()) return;
  Json pod = it->second;
  pods_.erase(it);
  Record("pods", "DELETED", pod);
}

void FakeApiServer::DeleteNode(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  Json node = it->second;
  nodes_.erase(it);
  Record("nodes", "DELETED", node);
}

std::map<std::string, Json>& FakeApiServer::Store(const std::string& kind) {
  if (kind == "nodes") return nodes_;
  if (kind == "pods") return pods_;
  if (kind == "secrets") return secrets_;
  if (kind == "resourceclaims") return claims_;
  if (kind == "resourceslices") return slices_;
  return webhook_configs_;
}

void FakeApiServer::PutWebhookConfiguration(Json config) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name = Meta(config, "name");
  const bool exists = webhook_configs_.count(name) != 0;
  Record("mutatingwebhookconfigurations", exists ? "MODIFIED" : "ADDED", config);
  webhook_configs_[name] = config;
}

Json FakeApiServer::GetWebhookConfiguration(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = webhook_configs_.find(name);
  return it == webhook_configs_.end() ? Json(nullptr) : it->second;
}

Json FakeApiServer::GetPod(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(Key(ns, name));
  return it == pods_.end() ? Json(nullptr) : it->second;
}

Json FakeApiServer::GetNode(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? Json(nullptr) : it->second;
}

std::vector<Json> FakeApiServer::Pods() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Json> out;
  for (const auto& [k, v] : pods_) out.push_back(v);
  return out;
}

int64_t FakeApiServer::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

void FakeApiServer::FailNext(int n, int status, const std::string& method) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.push_back(Fault{n, status, method});
}

void FakeApiServer::ClearFaults() {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.clear();
}

void FakeApiServer::DropWatchesAfter(int events) {
  std::lock_guard<std::mutex> lock(mu_);
  drop_after_ = events;
}

void FakeApiServer::DropActiveWatches() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++drop_generation_;
  }
  cv_.notify_all();
}

void FakeApiServer::Compact(bool http_410) {
  std::lock_guard<std::mutex> lock(mu_);
  compacted_rv_ = rv_;
  compact_http_ = http_410;
}

int FakeApiServer::requests(const std::string& method) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = request_counts_.find(method);
  return it == request_counts_.end() ? 0 : it->second;
}

int FakeApiServer::bindings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(bound_log_.size());
}

std::vector<std::string> FakeApiServer::bound_log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bound_log_;
}

void FakeApiServer::HandleList(const std::string& kind, const std::string& ns,
                               const httplib::Request& req, httplib::Response& res) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto& store = Store(kind);
  std::vector<const Json*> all;
  for (const auto& [k, v] : store) {
    if (!ns.empty() && Meta(v, "namespace") != ns) continue;
    if (Matches(v, req)) all.push_back(&v);
  }
  size_t offset = 0;
  std::string list_rv = std::to_string(rv_);
  if (req.has_param("continue")) {
    const auto parts = Split(req.get_param_value("continue"), ':');
    if (parts.size() == 2) {
      offset = std::stoul(parts[0]);
      list_rv = parts[1];
    }
  }
  size_t limit = all.size();
  if (req.has_param("limit")) limit = std::stoul(req.get_param_value("limit"));
  Json items = Json::array();
  size_t i = offset;
  for (; i < all.size() && items.size() < limit; ++i) items.push_back(*all[i]);
  Json meta = {{"resourceVersion", list_rv}};
  if (i < all.size()) meta["continue"] = std::to_string(i) + ":" + list_rv;
  const bool slices = kind == "resourceslices";
  const Json body = {{"kind", slices            ? "ResourceSliceList"
                              : kind == "nodes" ? "NodeList"
                                                : "PodList"},
                     {"apiVersion", slices ? "resource.k8s.io/v1" : "v1"},
                     {"metadata", meta},
                     {"items", items}};
  res.set_content(body.dump(), "application/json");
}

void FakeApiServer::HandlePatch(const std::string& kind, const std::string& ns,
                                const std::string& name, const httplib::Request& req,
                                httplib::Response& res) {
  Json patch = Json::parse(req.body, nullptr, false);
  if (patch.is_discarded()) {
    SendStatus(res, 400, "BadRequest", "invalid JSON in patch body");
    return;
  }
  const std::string ctype = req.get_header_value("Content-Type");
  std::lock_guard<std::mutex> lock(mu_);
  auto& store = Store(kind);
  auto it = store.find(kind == "pods" ? Key(ns, name) : name);
  if (it == store.end()) {
    SendStatus(res, 404, "NotFound", kind + " \"" + name + "\" not found");
    return;
  }
  Json& obj = it->second;
  Json updated = obj;
  if (ctype.find("json-patch+json") != std::string::npos) {
    try {
      updated = obj.patch(patch);
    } catch (const std::exception& e) {
      SendStatus(res, 422, "Invalid", e.what());
      return;
    }
    // A resourceVersion in the patched object is a precondition, as for an update.
    if (Meta(updated, "resourceVersion") != Meta(obj, "resourceVersion")) {
      SendStatus(res, 409, "Conflict",
                 "Operation cannot be fulfilled on " + kind + " \"" + name +
                     "\": the object has been modified; please apply your changes to the "
                     "latest version and try again");
      return;
    }
  } else if (ctype.find("merge-patch+json") != std::string::npos) {
    if (patch.is_object() && patch.contains("metadata") && patch["metadata"].is_object()) {
      const Json& pm = patch["metadata"];
      if (pm.contains("resourceVersion") &&
          pm["resourceVersion"].get<std::string>() != Meta(obj, "resourceVersion")) {
        SendStatus(res, 409, "Conflict",
                   "Operation cannot be fulfilled on " + kind + " \"" + name +
                       "\": the object has been modified; please apply your changes to the "
                       "latest version and try again");
        return;
      }
      if (pm.contains("uid") && pm["uid"].get<std::string>() != Meta(obj, "uid")) {
        SendStatus(res, 409, "Conflict",
                   "Precondition failed: UID in precondition: " + pm["uid"].get<std::string>() +
                       ", UID in object meta: " + Meta(obj, "uid"));
        return;
      }
    }
    updated.merge_patch(patch);
  } else {
    SendStatus(res, 415, "UnsupportedMediaType", "unsupported patch type " + ctype);
    return;
  }
  updated["metadata"]["name"] = obj["metadata"]["name"];
  updated["metadata"]["uid"] = obj["metadata"]["uid"];
  Record(kind, "MODIFIED", updated);
  obj = updated;
  res.set_content(obj.dump(), "application/json");
}

void FakeApiServer::HandleBinding(const std::string& ns, const std::string& name,
                                  const httplib::Request& req, httplib::Response& res) {
  Json b = Json::parse(req.body, nullptr, false);
  if (b.is_discarded() || !b.contains("target") || !b["target"].contains("name")) {
    SendStatus(res, 400, "BadRequest", "binding needs a target");
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pods_.find(Key(ns, name));
  if (it == pods_.end()) {
    SendStatus(res, 404, "NotFound", "pods \"" + name + "\" not found");
    return;
  }
  Json& pod = it->second;
  const std::string uid = Meta(b, "uid");
  if (!uid.empty() && uid != Meta(pod, "uid")) {
    SendStatus(res, 409, "Conflict",
               "Precondition failed: UID in precondition: " + uid +
                   ", UID in object meta: " + Meta(pod, "uid"));
    return;
  }
  const std::string current = FieldAt(pod, "spec.nodeName");
  if (!current.empty()) {
    SendStatus(res, 409, "Conflict",
               "pod " + name + " is already assigned to node \"" + current + "\"");
    return;
  }
  const std::string node = b["target"]["name"].get<std::string>();
  pod["spec"]["nodeName"] = node;
  Record("pods", "MODIFIED", pod);
  bound_log_.push_back(ns + "/" + name + "->" + node);
  res.status = 201;
  res.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Success","code":201})",
                  "application/json");
}

}  // namespace vgpu::k8s::testing
