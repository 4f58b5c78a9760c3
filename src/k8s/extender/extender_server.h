// ExtenderServer: HTTP(S) front of the extender.
//
//   listen address (default 127.0.0.1:8888, HTTPS when a certificate and key are given):
//     POST /filter, /prioritize, /bind      the extender verbs (kube-scheduler's urlPrefix + verb)
//     GET  /healthz, /readyz, /metrics
//   metrics address (default 0.0.0.0:9395, plain HTTP; "" = none):
//     GET  /metrics, /healthz, /readyz
// The verbs listen on loopback by default because /bind acts with the scheduler's credentials:
// only the kube-scheduler container beside it should reach them.
//
// Contract: Start() binds both sockets or fails (kInvalidArgument for a malformed address or
// unreadable certificate, kUnavailable when the address is taken); Stop() ends the servers and
// joins their threads. /healthz is 200 while the process serves; /readyz is 200 once the
// extender is ready (cluster state loaded), 503 before. Request bodies above 64 MiB are refused.
// Thread-safe; requests run on a pool of `threads` workers per listener.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "k8s/api/listen_address.h"
#include "k8s/extender/extender.h"

namespace httplib {
class Server;
}

namespace vgpu::k8s {

struct ServerOptions {
  std::string listen = "127.0.0.1:8888";
  std::string metrics_listen = "0.0.0.0:9395";
  std::string tls_cert;  // PEM files; both or neither
  std::string tls_key;
  int threads = 64;
  // Idle keep-alive connections are closed after this; it also bounds how long Stop() waits.
  int keep_alive_seconds = 5;
};

class ExtenderServer {
 public:
  ExtenderServer(Extender* extender, std::function<std::string()> render_metrics,
                 ServerOptions options);
  ~ExtenderServer();

  Status Start();
  void Stop();
  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }
  bool tls() const { return !options_.tls_cert.empty(); }

 private:
  void Routes(httplib::Server& s, bool verbs);

  Extender* extender_;
  std::function<std::string()> render_metrics_;
  ServerOptions options_;
  std::unique_ptr<httplib::Server> main_, metrics_;
  std::thread main_thread_, metrics_thread_;
  int port_ = 0, metrics_port_ = 0;
  int main_fd_ = -1, metrics_fd_ = -1;  // listening sockets (owned by the servers)
};

}  // namespace vgpu::k8s
