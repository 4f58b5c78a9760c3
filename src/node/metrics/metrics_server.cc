#include "node/metrics/metrics_server.h"

#include <httplib.h>

#include <chrono>

namespace vgpu::node {

Status ParseListenAddress(const std::string& listen, std::string* host, int* port) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("\"" + listen + "\" is not host:port or :port");
  }
  std::string h = listen.substr(0, colon);
  std::string p = listen.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArgument("\"" + listen + "\": the port must be a number 0-65535");
  }
  int n = std::stoi(p);
  if (n > 65535) return Status::InvalidArgument("\"" + listen + "\": port above 65535");
  *host = h.empty() ? "0.0.0.0" : h;
  *port = n;
  return Status::Ok();
}

MetricsServer::MetricsServer(std::function<std::string()> metrics, std::function<bool()> ready)
    : metrics_(std::move(metrics)), ready_(std::move(ready)) {}

MetricsServer::~MetricsServer() { Stop(); }

void MetricsServer::SetInjector(Injector injector) { injector_ = std::move(injector); }

void MetricsServer::SetNotReadyReason(std::function<std::string()> why_not) {
  why_not_ready_ = std::move(why_not);
}

Status MetricsServer::Start(const std::string& listen) {
  std::string host;
  int port = 0;
  VGPU_RETURN_IF_ERROR(ParseListenAddress(listen, &host, &port));
  server_ = std::make_unique<httplib::Server>();
  // SO_REUSEADDR only: with SO_REUSEPORT (the library's default) a second daemon on the same
  // port would bind too and silently take half of the scrapes.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    std::string why_not;
    if (why_not_ready_) {
      why_not = why_not_ready_();
    } else if (ready_ && !ready_()) {
      why_not = "not registered with kubelet";
    }
    res.status = why_not.empty() ? 200 : 503;
    res.set_content(why_not.empty() ? "ready\n" : why_not + "\n", "text/plain");
  });
  if (injector_) {
    server_->Post("/sim/health", [this](const httplib::Request& req, httplib::Response& res) {
      InjectRequest r;
      r.gpu = req.get_param_value("gpu");
      r.event = req.get_param_value("event");
      std::string bad;
      auto number = [&](const char* name, uint64_t max, uint64_t* out) {
        std::string text = req.get_param_value(name);
        if (text.empty() || !bad.empty()) return;
        if (text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos ||
            std::stoull(text) > max) {
          bad =
              std::string(name) + ": \"" + text + "\" is not a number up to " + std::to_string(max);
          return;
        }
        *out = std::stoull(text);
      };
      uint64_t pid = 0, gi = r.gpu_instance, ci = r.compute_instance;
      number("code", 999999999, &r.code);
      number("pid", 0x7FFFFFFF, &pid);
      number("gi", 0xFFFFFFFE, &gi);
      number("ci", 0xFFFFFFFE, &ci);
      if (!bad.empty()) {
        res.status = 400;
        res.set_content(bad + "\n", "text/plain");
        return;
      }
      r.pid = static_cast<uint32_t>(pid);
      r.gpu_instance = static_cast<uint32_t>(gi);
      r.compute_instance = static_cast<uint32_t>(ci);
      Status s = injector_(r);
      res.status =
          s.ok() ? 200
                 : (s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound
                        ? 400
                        : 500);
      res.set_content(s.ok() ? "injected\n" : s.message() + "\n", "text/plain");
    });
  }
  if (port == 0) {
    port = server_->bind_to_any_port(host);
    if (port < 0) return Status::Unavailable("cannot listen on " + listen);
  } else if (!server_->bind_to_port(host, port)) {
    return Status::Unavailable("cannot listen on " + listen + " (in use or not permitted)");
  }
  port_ = port;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void MetricsServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace vgpu::node
