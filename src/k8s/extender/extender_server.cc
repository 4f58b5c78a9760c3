#include "k8s/extender/extender_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <filesystem>

#include "k8s/api/encoding.h"
#include "k8s/api/listen_address.h"
#include "k8s/api/tls.h"

namespace vgpu::k8s {
namespace {

constexpr size_t kMaxExtenderBody = size_t{64} << 20;

void Configure(httplib::Server& s, int threads, int keep_alive_seconds, int* listen_fd) {
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // One socket per address: a second vgpu scheduler on the same port fails instead of sharing
  // it (cpp-httplib would set SO_REUSEPORT). The descriptor is kept to raise the backlog later.
  s.set_socket_options([listen_fd](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    *listen_fd = sock;
  });
  s.set_keep_alive_max_count(100000);
  s.set_keep_alive_timeout(keep_alive_seconds);
  s.set_payload_max_length(kMaxExtenderBody);
  s.set_tcp_nodelay(true);
}

Result<int> Bind(httplib::Server& s, const HostPort& hp, const std::string& text,
                 const int* listen_fd) {
  int port = hp.port;
  if (hp.port == 0) {
    port = s.bind_to_any_port(hp.host.c_str());
    if (port < 0) return Status::Unavailable("cannot listen on " + text);
  } else if (!s.bind_to_port(hp.host.c_str(), hp.port)) {
    return Status::Unavailable("cannot listen on " + text + " (address in use or not local)");
  }
  // cpp-httplib listens with a backlog of 5, so a burst of new connections (many clients
  // starting at once) would see dropped SYNs and 1 s retransmits. Linux lets listen() be
  // called again to enlarge it.
  if (*listen_fd >= 0) ::listen(*listen_fd, SOMAXCONN);
  return port;
}

}  // namespace

ExtenderServer::ExtenderServer(Extender* extender, std::function<std::string()> render_metrics,
                               ServerOptions options)
    : extender_(extender),
      render_metrics_(std::move(render_metrics)),
      options_(std::move(options)) {}

ExtenderServer::~ExtenderServer() { Stop(); }

void ExtenderServer::Routes(httplib::Server& s, bool verbs) {
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = extender_->ready();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ok\n" : "loading cluster state\n", "text/plain");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(render_metrics_ ? render_metrics_() : std::string(),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  if (!verbs) return;
  const auto verb = [&s](const char* path, auto handler) {
    s.Post(path, [handler](const httplib::Request& req, httplib::Response& res) {
      Extender::Reply r = handler(std::string_view(req.body));
      res.status = r.status;
      res.set_content(std::move(r.body), "application/json");
    });
    s.Get(path, [](const httplib::Request&, httplib::Response& res) {
      res.status = 405;
      res.set_content(R"({"Error":"use POST"})", "application/json");
    });
  };
  verb("/filter", [this](std::string_view b) { return extender_->Filter(b); });
  verb("/prioritize", [this](std::string_view b) { return extender_->Prioritize(b); });
  verb("/bind", [this](std::string_view b) { return extender_->Bind(b); });
}

Status ExtenderServer::Start() {
  auto main_addr = ParseListenAddress(options_.listen);
  if (!main_addr) return main_addr.error().WithContext("--listen");
  std::optional<HostPort> metrics_addr;
  if (!options_.metrics_listen.empty()) {
    auto m = ParseListenAddress(options_.metrics_listen);
    if (!m) return m.error().WithContext("--metrics-listen");
    metrics_addr = *m;
  }
  if (options_.tls_cert.empty() != options_.tls_key.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together");
  }
  if (!options_.tls_cert.empty()) {
    for (const auto& [flag, path] :
         {std::pair{"--tls-cert", options_.tls_cert}, std::pair{"--tls-key", options_.tls_key}}) {
      auto text = ReadWholeFile(path);
      if (!text) return text.error().WithContext(flag);
      Status parsed = std::string_view(flag) == "--tls-cert" ? ParseCertificatePem(*text).status()
                                                             : ParsePrivateKeyPem(*text).status();
      if (!parsed.ok())
        return Status::InvalidArgument(std::string(flag) + ": " + path + ": " + parsed.message());
    }
    auto ssl =
        std::make_unique<httplib::SSLServer>(options_.tls_cert.c_str(), options_.tls_key.c_str());
    if (!ssl->is_valid()) {
      return Status::InvalidArgument("--tls-cert/--tls-key: cannot set up TLS: " +
                                     TakeOpenSslError());
    }
    main_ = std::move(ssl);
  } else {
    main_ = std::make_unique<httplib::Server>();
  }
  Configure(*main_, options_.threads, options_.keep_alive_seconds, &main_fd_);
  Routes(*main_, /*verbs=*/true);
  auto port = Bind(*main_, *main_addr, options_.listen, &main_fd_);
  if (!port) return port.error().WithContext("--listen");
  port_ = *port;
  if (metrics_addr) {
    metrics_ = std::make_unique<httplib::Server>();
    Configure(*metrics_, 4, options_.keep_alive_seconds, &metrics_fd_);
    Routes(*metrics_, /*verbs=*/false);
    auto mport = Bind(*metrics_, *metrics_addr, options_.metrics_listen, &metrics_fd_);
    if (!mport) {
      main_.reset();
      return mport.error().WithContext("--metrics-listen");
    }
    metrics_port_ = *mport;
    metrics_thread_ = std::thread([this] { metrics_->listen_after_bind(); });
  }
  main_thread_ = std::thread([this] { main_->listen_after_bind(); });
  while (!main_->is_running() || (metrics_ && !metrics_->is_running())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Status::Ok();
}

void ExtenderServer::Stop() {
  if (main_) main_->stop();
  if (metrics_) metrics_->stop();
  if (main_thread_.joinable()) main_thread_.join();
  if (metrics_thread_.joinable()) metrics_thread_.join();
}

}  // namespace vgpu::k8s
