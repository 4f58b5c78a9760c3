#include "k8s/webhook/webhook_server.h"

#include <httplib.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cctype>

#include "k8s/api/listen_address.h"
#include "k8s/api/tls.h"

namespace vgpu::k8s {

struct WebhookServer::KeyPair {
  X509Ptr cert;
  PkeyPtr key;
};

namespace {

constexpr size_t kMaxReviewBody = size_t{16} << 20;

// The path is also the route's pattern (a regular expression), so it is kept to plain characters.
bool ValidPath(const std::string& p) {
  if (p.size() < 2 || p[0] != '/' || p == "/healthz") return false;
  for (char c : p) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '/' && c != '-' && c != '_') {
      return false;
    }
  }
  return true;
}

Result<std::shared_ptr<const WebhookServer::KeyPair>> LoadPair(const std::string& cert_pem,
                                                               const std::string& key_pem) {
  auto cert = ParseCertificatePem(cert_pem);
  if (!cert) return cert.error().WithContext("webhook certificate");
  auto key = ParsePrivateKeyPem(key_pem);
  if (!key) return key.error().WithContext("webhook key");
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    TakeOpenSslError();
    return Status::InvalidArgument("the webhook key does not belong to the webhook certificate");
  }
  auto pair = std::make_shared<WebhookServer::KeyPair>();
  pair->cert = std::move(*cert);
  pair->key = std::move(*key);
  return std::shared_ptr<const WebhookServer::KeyPair>(std::move(pair));
}

}  // namespace

WebhookServer::WebhookServer(AdmissionWebhook* webhook, WebhookServerOptions options)
    : webhook_(webhook), options_(std::move(options)) {}

WebhookServer::~WebhookServer() { Stop(); }

Status WebhookServer::SetCertificate(const std::string& cert_pem, const std::string& key_pem) {
  auto pair = LoadPair(cert_pem, key_pem);
  if (!pair) return pair.error();
  std::lock_guard<std::mutex> lock(pair_mu_);
  pair_ = std::move(*pair);
  return Status::Ok();
}

Status WebhookServer::Start() {
  auto addr = ParseListenAddress(options_.listen);
  if (!addr) return addr.error().WithContext("--webhook-listen");
  if (!ValidPath(options_.path)) {
    return Status::InvalidArgument(
        "--webhook-path: expected '/' then letters, digits, '/', '-' or "
        "'_' (not /healthz), got '" +
        options_.path + "'");
  }
  VGPU_RETURN_IF_ERROR(SetCertificate(options_.cert_pem, options_.key_pem));

  // The certificate is picked at each handshake from pair_, so it can be replaced while serving.
  auto ssl = std::make_unique<httplib::SSLServer>([this](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_cert_cb(
        &ctx,
        [](SSL* s, void* arg) -> int {
          auto* self = static_cast<WebhookServer*>(arg);
          std::shared_ptr<const KeyPair> pair;
          {
            std::lock_guard<std::mutex> lock(self->pair_mu_);
            pair = self->pair_;
          }
          if (!pair) return 0;
          return SSL_use_certificate(s, pair->cert.get()) == 1 &&
                         SSL_use_PrivateKey(s, pair->key.get()) == 1
                     ? 1
                     : 0;
        },
        this);
    return true;
  });
  if (!ssl->is_valid()) {
    return Status::Internal("cannot set up TLS for the webhook: " + TakeOpenSslError());
  }
  server_ = std::move(ssl);
  const int threads = options_.threads;
  server_->new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  int* fd = &listen_fd_;
  server_->set_socket_options([fd](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);  // not SO_REUSEPORT
    *fd = sock;
  });
  server_->set_keep_alive_timeout(options_.keep_alive_seconds);
  server_->set_payload_max_length(kMaxReviewBody);
  server_->set_tcp_nodelay(true);
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server_->Post(options_.path, [this](const httplib::Request& req, httplib::Response& res) {
    AdmissionWebhook::Reply reply = webhook_->Review(req.body);
    res.status = reply.http_status;
    res.set_content(std::move(reply.body), "application/json");
  });
  if (addr->port == 0) {
    port_ = server_->bind_to_any_port(addr->host.c_str());
    if (port_ < 0)
      return Status::Unavailable("--webhook-listen: cannot listen on " + options_.listen);
  } else if (!server_->bind_to_port(addr->host.c_str(), addr->port)) {
    return Status::Unavailable("--webhook-listen: cannot listen on " + options_.listen +
                               " (address in use or not local)");
  } else {
    port_ = addr->port;
  }
  if (listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return Status::Ok();
}

void WebhookServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace vgpu::k8s
