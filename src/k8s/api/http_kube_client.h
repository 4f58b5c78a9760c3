// HttpKubeClient: KubeClient over HTTPS (or plain HTTP) with cpp-httplib and OpenSSL.
//
// Contract:
// - Create() validates the configuration (URL, PEM data, key matches certificate) and fails with
//   kInvalidArgument naming what is wrong; it does not contact the server.
// - Server certificates are verified against `ca_pem` (or the system trust store when empty),
//   including the host name, unless insecure_skip_tls_verify is set. A client certificate, a
//   bearer token, or both, authenticate the client. `token_file` is re-read at most every
//   `token_reload` so rotated service-account tokens are picked up.
// - Every request is retried with exponential backoff and jitter (initial_backoff doubling to
//   max_backoff, at most max_attempts tries) on transport errors, 429 (honouring Retry-After)
//   and 500/502/503/504. Other statuses are returned at once (mapping in kube_client.h).
// - Requests run concurrently over a pool of at most max_connections keep-alive connections; a
//   watch uses a connection of its own. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "k8s/api/kube_client.h"
#include "k8s/api/kube_config.h"

namespace httplib {
class ClientImpl;
}

namespace vgpu::k8s {

struct ClientOptions {
  int max_attempts = 5;
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::seconds token_reload{60};
  size_t max_connections = 8;
  std::string user_agent = "vgpu";
};

// Counters, for metrics and tests.
struct ClientStats {
  uint64_t requests = 0;  // HTTP exchanges, retries included
  uint64_t retries = 0;
  uint64_t watches = 0;
};

class HttpKubeClient final : public KubeClient {
 public:
  static Result<std::unique_ptr<HttpKubeClient>> Create(const KubeConfig& config,
                                                        const ClientOptions& options = {});
  ~HttpKubeClient() override;

  Result<Json> Get(ResourceKind kind, const std::string& ns, const std::string& name) override;
  Result<ObjectList> List(ResourceKind kind, const std::string& ns,
                          const ListOptions& options) override;
  Result<Json> Patch(ResourceKind kind, const std::string& ns, const std::string& name,
                     const Json& patch, PatchType type) override;
  Result<Json> Create(ResourceKind kind, const std::string& ns, const Json& object) override;
  Result<Json> Update(ResourceKind kind, const std::string& ns, const std::string& name,
                      const Json& object) override;
  Status Delete(ResourceKind kind, const std::string& ns, const std::string& name,
                const std::string& uid) override;
  Result<Json> ServerVersion() override;
  Status CreateBinding(const std::string& ns, const std::string& name, const std::string& uid,
                       const std::string& node) override;
  Status Watch(ResourceKind kind, const std::string& ns, const WatchOptions& options,
               const std::function<bool(WatchEvent&&)>& on_event,
               WatchCanceller* canceller) override;

  ClientStats stats() const;
  const std::string& server() const { return config_.server; }

 private:
  struct Response {
    int status = 0;
    std::string body;
  };
  HttpKubeClient(KubeConfig config, ClientOptions options);
  Status Init();
  // The whole reason a request got no answer (an httplib::Error), with the address and, for a
  // refused or unreachable connection, what the operating system says.
  std::string TransportError(int error) const;
  Result<std::unique_ptr<httplib::ClientImpl>> NewConnection(
      std::chrono::milliseconds read_timeout);
  std::unique_ptr<httplib::ClientImpl> Acquire(Status* error);
  void Release(std::unique_ptr<httplib::ClientImpl> c);
  std::string BearerToken();
  Result<Response> Do(const char* method, const std::string& path, const std::string& body,
                      std::string_view content_type);
  std::string ObjectPath(ResourceKind kind, const std::string& ns, const std::string& name) const;

  KubeConfig config_;
  ClientOptions options_;
  bool https_ = true;
  std::string host_;
  int port_ = 443;
  std::string base_path_;  // path prefix of the server URL, e.g. "" or "/k8s"

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<httplib::ClientImpl>> idle_;
  size_t open_ = 0;
  std::condition_variable pool_cv_;

  std::mutex token_mu_;
  std::string token_;
  std::chrono::steady_clock::time_point token_read_at_{};

  mutable std::mutex stats_mu_;
  ClientStats stats_;
};

// Maps an HTTP status and the API server's response body to a Status (see kube_client.h).
Status StatusFromHttp(int http_status, const std::string& body, const std::string& what);

}  // namespace vgpu::k8s
