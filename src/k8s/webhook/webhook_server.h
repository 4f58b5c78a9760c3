// WebhookServer: the HTTPS listener of the admission webhook (the API server calls webhooks only
// over TLS).
//
//   POST <path>      AdmissionReview in, AdmissionReview out (AdmissionWebhook::Review: 200, or
//                    400 for a malformed body); default path /webhook
//   GET  /healthz
//
// Contract:
// - Start() checks the certificate and key (PEM text, the key must match), binds `listen` and
//   serves; kInvalidArgument for a malformed address or path (/ then letters, digits, /, - or _) or
//   an unusable certificate, kUnavailable when the address is taken. Stop() ends the server and
//   joins its thread.
// - The certificate is chosen per TLS handshake, so SetCertificate() replaces it while serving
//   (a renewed certificate from files, e.g. cert-manager's) without dropping the listener; it
//   fails, changing nothing, on an unusable pair.
// - TLS 1.2 or newer. Request bodies above 16 MiB are refused. Requests run on a pool of
//   `threads` workers. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "k8s/webhook/admission_webhook.h"

namespace httplib {
class Server;
}

namespace vgpu::k8s {

struct WebhookServerOptions {
  std::string listen = ":9443";
  std::string path = "/webhook";
  std::string cert_pem;
  std::string key_pem;
  int threads = 8;
  int keep_alive_seconds = 5;
};

class WebhookServer {
 public:
  WebhookServer(AdmissionWebhook* webhook, WebhookServerOptions options);
  ~WebhookServer();

  Status Start();
  void Stop();
  int port() const { return port_; }
  Status SetCertificate(const std::string& cert_pem, const std::string& key_pem);

  struct KeyPair;  // the certificate and key in use (opaque)

 private:
  AdmissionWebhook* webhook_;
  WebhookServerOptions options_;
  std::mutex pair_mu_;
  std::shared_ptr<const KeyPair> pair_;  // guarded by pair_mu_
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;
};

}  // namespace vgpu::k8s
