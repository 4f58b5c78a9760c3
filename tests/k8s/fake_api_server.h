// FakeApiServer: a local Kubernetes API server for tests, serving the endpoints vgpu uses over
// HTTPS (a certificate from a test PKI) or HTTP:
//   GET    /api/v1/nodes[?watch=1]              GET/PATCH /api/v1/nodes/<name>
//   GET    /api/v1/pods[?watch=1]               GET    /api/v1/namespaces/<ns>/pods[?watch=1]
//   GET/PATCH /api/v1/namespaces/<ns>/pods/<name>
//   POST   /api/v1/namespaces/<ns>/pods/<name>/binding
//   GET/PATCH /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/<name>
//   POST   /api/v1/namespaces/<ns>/secrets      GET/PUT /api/v1/namespaces/<ns>/secrets/<name>
//   GET    /apis/resource.k8s.io/v1/namespaces/<ns>/resourceclaims/<name>
//   GET/POST /apis/resource.k8s.io/v1/resourceslices   GET/PUT/DELETE .../resourceslices/<name>
//   GET    /version
// Behaviour follows the real server where vgpu depends on it: bearer-token and client-certificate
// authentication, resourceVersions, list paging (limit/continue), label selectors (k=v) and field
// selectors (spec.nodeName=, status.phase!=), JSON merge and strategic merge patches of
// metadata with resourceVersion and UID preconditions (409), JSON patches (a resourceVersion
// the patch writes is a precondition, as for an update: 409 when stale), bindings (409 when already
// bound), deletes (409 when a UID precondition fails), creates (409 AlreadyExists) and updates (409
// on a stale resourceVersion, 404 when absent, 422 when data is not base64 or the Secret's type
// changes), watches that replay from a resourceVersion, send BOOKMARKs, and answer an ERROR event
// with code 410 when the version was compacted away. Faults can be injected: failing requests with
// a status, conflicts on patches, watches dropped after N events, compaction. Thread-safe.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "k8s/api/kube_config.h"
#include "support/temp_dir.h"
#include "test_pki.h"

namespace vgpu::k8s::testing {

using Json = nlohmann::json;

class FakeApiServer {
 public:
  struct Options {
    bool tls = true;
    std::string token = "test-token";  // "" = no token needed
    bool require_client_cert = false;
    int threads = 64;
  };
  FakeApiServer() : FakeApiServer(Options{}) {}
  explicit FakeApiServer(Options options);
  ~FakeApiServer();

  std::string url() const;
  const TestPki& pki() const { return pki_; }
  // A configuration that trusts the test CA and sends the token.
  KubeConfig ClientConfig() const;

  // ---- State (each change is a watch event and bumps the resourceVersion) ----
  void PutNode(Json node);
  void PutPod(Json pod);
  void DeletePod(const std::string& ns, const std::string& name);
  void DeleteNode(const std::string& name);
  Json GetPod(const std::string& ns, const std::string& name) const;  // null when absent
  Json GetNode(const std::string& name) const;
  void PutWebhookConfiguration(Json config);
  Json GetWebhookConfiguration(const std::string& name) const;  // null when absent
  std::vector<Json> Pods() const;
  void PutSecret(Json secret);
  Json GetSecret(const std::string& ns, const std::string& name) const;  // null when absent
  int64_t resource_version() const;
  // resource.k8s.io/v1 (fake_api_resource.cc).
  void PutResourceClaim(Json claim);
  void PutResourceSlice(Json slice);
  std::vector<Json> ResourceSlices() const;
  // What GET /version answers (default {"major": "1", "minor": "35", "gitVersion": "v1.35.0"}).
  void SetVersion(Json version);

  // ---- Faults ----
  // The next `n` requests of `method` ("" = any) are answered with `status`.
  void FailNext(int n, int status, const std::string& method = "");
  void ClearFaults();
  // Every watch connection is cut (no clean end) after sending `events` events; 0 = never.
  void DropWatchesAfter(int events);
  // Ends every running watch now, abruptly.
  void DropActiveWatches();
  // Watches that start from a version older than the current one get 410 (an ERROR event with
  // code 410, as the real server does); `http_410` answers the request itself with HTTP 410.
  void Compact(bool http_410 = false);

  // ---- Observations ----
  int requests(const std::string& method) const;
  int bindings() const;
  int active_watches() const { return active_watches_.load(); }
  int watches_started() const { return watches_started_.load(); }
  std::vector<std::string> bound_log() const;  // "ns/name->node" in order

 private:
  struct Event {
    int64_t rv;
    std::string type;
    std::string kind;  // "nodes" / "pods" / "mutatingwebhookconfigurations" / "secrets"
    Json object;
  };
  std::string Key(const std::string& ns, const std::string& name) const { return ns + "/" + name; }
  std::map<std::string, Json>& Store(const std::string& kind);                  // holds mu_
  void Record(const std::string& kind, const std::string& type, Json& object);  // holds mu_
  bool Authorized(const httplib::Request& req, httplib::Response& res);
  bool InjectedFault(const httplib::Request& req, httplib::Response& res);
  void HandleList(const std::string& kind, const std::string& ns, const httplib::Request& req,
                  httplib::Response& res);
  void HandleWatch(const std::string& kind, const std::string& ns, const httplib::Request& req,
                   httplib::Response& res);
  void HandlePatch(const std::string& kind, const std::string& ns, const std::string& name,
                   const httplib::Request& req, httplib::Response& res);
  // Routes of secrets (fake_api_secrets.cc); `guard` wraps each handler (auth, faults, counts).
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  void RouteSecrets(const std::function<Handler(Handler)>& guard);
  void RouteResources(const std::function<Handler(Handler)>& guard);
  void HandleCreateSecret(const std::string& ns, const httplib::Request& req,
                          httplib::Response& res);
  void HandleUpdateSecret(const std::string& ns, const std::string& name,
                          const httplib::Request& req, httplib::Response& res);
  void HandleBinding(const std::string& ns, const std::string& name, const httplib::Request& req,
                     httplib::Response& res);
  static void SendStatus(httplib::Response& res, int code, const std::string& reason,
                         const std::string& message);

  Options options_;
  TestPki pki_;
  vgpu::testing::TempDir dir_{"vgpu-fake-api"};  // the server's certificate and key
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t rv_ = 100;
  int64_t compacted_rv_ = 0;
  bool compact_http_ = false;
  std::map<std::string, Json> nodes_;            // name -> object
  std::map<std::string, Json> pods_;             // ns/name -> object
  std::map<std::string, Json> webhook_configs_;  // name -> object
  std::map<std::string, Json> secrets_;          // ns/name -> object
  std::map<std::string, Json> claims_;           // ns/name -> ResourceClaim
  std::map<std::string, Json> slices_;           // name -> ResourceSlice
  Json version_ = {{"major", "1"}, {"minor", "35"}, {"gitVersion", "v1.35.0"}};
  int64_t next_uid_ = 1;
  std::vector<Event> log_;
  struct Fault {
    int remaining;
    int status;
    std::string method;
  };
  std::vector<Fault> faults_;
  int drop_after_ = 0;
  uint64_t drop_generation_ = 0;
  std::map<std::string, int> request_counts_;
  std::vector<std::string> bound_log_;
  std::atomic<int> active_watches_{0};
  std::atomic<int> watches_started_{0};
  std::atomic<bool> stopping_{false};
};

// A minimal pod / node object with the given fields.
Json MakePod(const std::string& ns, const std::string& name, const std::string& uid,
             const Json& containers = Json::array(), const Json& annotations = Json::object());
Json MakeNode(const std::string& name, const Json& annotations = Json::object(),
              const Json& labels = Json::object());

}  // namespace vgpu::k8s::testing
